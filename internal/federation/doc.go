// Package federation is the NATS JetStream side of hubs on several machines
// (docs/protocol.md §16, docs/federation.md): it connects with a URL, an
// optional credentials file and a team name, ensures the team's stream
// HM_<TEAM> on hm.<team>.>, publishes messages for roles other hubs host
// (Nats-Msg-Id = the message id, waiting for the PubAck), consumes the
// roles this hub hosts with one durable pull consumer each, and exchanges
// presence: which roles each hub hosts and their states, signed with the
// hub's NATS identity when it has one.
//
// It knows nothing of the broker or the hub: they give it small functions
// and take Envelopes and Presences back (internal/hub/federation.go).
package federation
