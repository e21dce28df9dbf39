package hub

import (
	"context"
	"strings"

	"hm/broker"
	"hm/broker/proto"
	"hm/roles"
	"hm/triggers"
)

// triggerSink commits one trigger file through the broker (SPEC §7).
func (h *Hub) triggerSink(ctx context.Context, f triggers.File) error {
	// An id the watcher derived is the hub's own (reserved "trg-"); an id
	// the file names is the writer's, and a reserved one is refused.
	s := broker.Submission{From: roles.RoleUser, Trusted: true, Content: f.Content, MessageID: f.MessageID,
		HubID: f.MessageID == triggers.DerivedID(f.Name, f.Content), Channel: broker.ChannelTrigger, Received: f.Seen}
	switch {
	case f.Target == roles.RoleAll:
		s.Broadcast = true
	case f.Target == "workers":
		s.Target = "builder"
	case strings.HasPrefix(f.Target, "others-"):
		skip, err := h.Team.Resolve(strings.TrimPrefix(f.Target, "others-"))
		if err != nil || skip.Kind != roles.TargetMember {
			return triggers.Reject(string(proto.CodeInvalidTarget), "%s names no team member", f.Target)
		}
		for _, m := range h.Team.Others(skip.Member.Role) {
			s.Recipients = append(s.Recipients, m.Role)
		}
		s.TargetName = "others-" + skip.Member.Role
	default:
		s.Target = f.Target
	}
	_, err := h.Broker.Submit(ctx, s)
	if err == nil {
		return nil
	}
	code := proto.CodeOf(err)
	if code == proto.CodeJournalUnavailable || code == proto.CodeInternal {
		return err // transient: the file stays and is retried
	}
	return triggers.Reject(string(code), "%v", err)
}
