package hub

import (
	"context"
	"encoding/json"
	"net/http"

	"hm/agent"
	"hm/internal/cockpit"
)

// cockpitHandler is the web cockpit (/ui/, issue #17) over this hub; its
// attach sessions count against attach, with /attach/'s.
func (h *Hub) cockpitHandler(ctx context.Context, attach func(http.Handler) http.Handler) http.Handler {
	return cockpit.New(cockpit.Deps{
		Port:       h.Port,
		IsOperator: h.Tokens.IsOperator,
		ServeWS:    h.Broker.ServeOperatorWS,
		Attach: func(authorize func(*http.Request) bool) http.Handler {
			return attach(agent.AttachHandlerContext(ctx, h.lookupPane, authorize, h.log.With("component", "attach", "via", "cockpit")))
		},
		Snapshot:     func(ctx context.Context) any { return h.Snapshot(ctx) },
		Handoff:      h.cockpitHandoff,
		Verify:       h.cockpitVerify,
		MessageChain: h.messageChain,
		SessionKey:   h.Tokens.Key("hm cockpit sessions"),
		SessionFile:  h.Layout.CockpitSessions(),
		Logger:       h.log.With("component", "cockpit"),
	})
}

// cockpitHandoff is the session handoff, else the briefing
// (layout.ReadHandoff); its path is the session handoff's when neither
// holds anything yet.
func (h *Hub) cockpitHandoff(context.Context) (cockpit.Handoff, error) {
	path, text, err := h.Layout.ReadHandoff()
	if err != nil {
		return cockpit.Handoff{}, err
	}
	if path == "" {
		path = h.Layout.Session()
	}
	return cockpit.Handoff{Path: path, Markdown: text}, nil
}

// cockpitVerify runs the ledger's verification (`hm journal verify`).
func (h *Hub) cockpitVerify(ctx context.Context) (cockpit.Verification, error) {
	rep, err := h.Ledger.Verify(ctx)
	if err != nil {
		return cockpit.Verification{}, err
	}
	return cockpit.Verification{OK: rep.OK, Rows: rep.Events, Messages: rep.Messages, Problem: rep.FirstBad}, nil
}

// messageChain is a message's events and whether each links to the event
// before it in the ledger's chain (journal.MessageChain).
func (h *Hub) messageChain(ctx context.Context, messageID string) (cockpit.MessageChain, bool, error) {
	evs, linked, found, err := h.Ledger.MessageChain(ctx, messageID)
	if err != nil {
		return cockpit.MessageChain{}, false, err
	}
	out := cockpit.MessageChain{Events: make([]cockpit.ChainEvent, 0, len(evs)), ChainOK: linked}
	for _, e := range evs {
		out.Events = append(out.Events, cockpit.ChainEvent{Event: string(e.Event), At: e.AtMs, Detail: detailJSON(e.Detail), Hash: e.Hash})
	}
	return out, found, nil
}

// detailJSON is an event's detail_json as JSON: null when empty, a string
// when it is not valid JSON (a tampered row still shows what it holds).
func detailJSON(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
