package hub

import "hm/internal/federation"

// FedPresence is the presence this hub would publish now (tests only); nil
// when it is not federated.
func (h *Hub) FedPresence() []federation.RoleState {
	if h.fed == nil {
		return nil
	}
	return h.fed.presence()
}

// Looks is how often the handoff writer, the waiting watch and the status
// line looked (tests only).
func (h *Hub) Looks() (handoff, waiting, terminal int64) {
	return h.act.looks.handoff.Load(), h.act.looks.waiting.Load(), h.act.looks.terminal.Load()
}
