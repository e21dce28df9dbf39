package hub

import (
	"context"

	"hm/agent"
	"hm/broker"
	"hm/internal/slots"
	"hm/roles"
)

// newSlots composes the background slots (SPEC §8), or returns nil when this
// hub has none: no panes, max 0, or an owner that is not a member.
func (h *Hub) newSlots() *slots.Set {
	if h.opts.NoPanes || h.Team().Background.Max == 0 {
		return nil
	}
	owner, ok := h.Team().Lookup(h.Team().Background.Owner)
	if !ok {
		return nil
	}
	ttl := h.opts.BackgroundIdle
	if ttl <= 0 {
		ttl = h.Team().Background.IdleTTL
	}
	return slots.New(slots.Config{Owner: owner, Members: h.Team().BackgroundMembers(), IdleTTL: ttl, Host: slotHost{h}, Logger: h.log})
}

// slotHost gives the slots the hub's panes, tokens and broker.
type slotHost struct{ h *Hub }

func (s slotHost) PaneSpec(m roles.Member) agent.Spec { return s.h.paneSpec(s.h.Team(), m, false) }

func (s slotHost) StartPane(spec agent.Spec) (*agent.Pane, error) {
	return agent.Start(s.h.panes.ctx, spec, s.h.log)
}

func (s slotHost) AddPane(role string, p *agent.Pane) { s.h.panes.add(role, p) }
func (s slotHost) RemovePane(role string)             { s.h.panes.remove(role) }
func (s slotHost) RevokeToken(role string)            { s.h.Tokens.Revoke(role) }

func (s slotHost) Submit(ctx context.Context, sub broker.Submission) error {
	_, err := s.h.Broker.Submit(ctx, sub)
	return err
}

// slotComponent stops the slots with the hub's other components.
type slotComponent struct{ *slots.Set }

func (c slotComponent) stop(ctx context.Context) { c.Stop(ctx) }
