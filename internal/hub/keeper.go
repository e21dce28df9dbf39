package hub

import (
	"strconv"
	"strings"
	"sync"

	"hm/agent"
)

// paneKeep is the keeper the team's panes start with: Options.PaneKeeper
// made adoptable (agent.Keeper.SocketDir) with the root's pane secret and
// settings.json "paneKeepMinutes" as its grace, so that the next hub on
// the root adopts the panes of one that died.
type paneKeep struct {
	once sync.Once
	k    *agent.Keeper
}

// paneKeeper is the keeper of a pane: adoptable for the team's panes
// (main), the root's one pane host listening in the layout's
// PaneSocketDir; the plain one for background slots, which a new hub does
// not adopt. nil when Options.PaneKeeper is nil.
func (h *Hub) paneKeeper(main bool) *agent.Keeper {
	if h.opts.PaneKeeper == nil || !main {
		return h.opts.PaneKeeper
	}
	h.keep.once.Do(func() {
		h.keep.k = h.opts.PaneKeeper
		if h.Team().PaneKeep <= 0 {
			return
		}
		secret, err := h.Layout.EnsurePaneSecret()
		if err != nil {
			h.log.Warn("no pane secret: a pane's keeper ends with the hub and the next hub restarts its program", "err", err)
			return
		}
		dir, err := h.Layout.PaneSocketDir()
		if err != nil {
			h.log.Warn("the pane host cannot listen for the next hub: the panes end with this hub, and the next hub restarts their programs", "err", err)
			return
		}
		k := *h.opts.PaneKeeper
		k.SocketDir, k.Root, k.Secret, k.Grace = dir, h.Layout.Root, secret, h.Team().PaneKeep
		h.keep.k = &k
	})
	return h.keep.k
}

// acceptAdopted takes in the environment a hub before gave the program of
// role's pane, which this hub adopted: its HM_TOKEN stays valid for role
// (the program's hooks and hm send use it), and a port it cannot reach
// is logged.
func (h *Hub) acceptAdopted(role string, env []string) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HM_TOKEN":
			h.Tokens.Accept(role, v)
		case "HM_PORT":
			if v != strconv.Itoa(h.Port) {
				h.log.Warn("the adopted program was given another hub port: its hm send, hooks and hm mcp find this hub through the root's hub.json once nobody answers at the old one", "role", role, "port", v, "hub port", h.Port)
			}
		}
	}
}

// LeavePanes makes the hub's shutdown leave the team panes' programs to
// their keepers instead of ending them (agent.Pane.Leave): the next hm up
// on the root adopts them. Call it before the hub's context ends.
func (h *Hub) LeavePanes() {
	if h.panes != nil {
		h.panes.leave.Store(true)
	}
}
