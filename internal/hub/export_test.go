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
