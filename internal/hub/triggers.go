package hub

import (
	"context"
	"fmt"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
	"hm/triggers"
)

// unverifiedMark starts the typed text of an unsigned trigger file.
const unverifiedMark = "[unverified sender] "

// triggerSink commits one trigger file through the broker (SPEC §7). A
// signed file comes from its token's role (any role for the operator
// token); an unsigned one is let in only while triggers.allowUnsigned holds,
// recorded as sent by "unverified" and marked. Owner binding applies to the
// role a file claims either way. A message id already in the ledger from
// another sender or with other content is refused as duplicate_id; the same
// message again (a crash between commit and delete, hm-send's fallback after
// a lost ACK, or a repeated sender, number and body) is not delivered twice,
// and leaves a "repeated" event on the first copy.
func (h *Hub) triggerSink(ctx context.Context, f triggers.File) error {
	// An id the watcher derived is the hub's own (reserved "trg-"); an id
	// the file names is the writer's, and a reserved one is refused.
	s := broker.Submission{Content: f.Content, MessageID: f.MessageID, HubID: f.IDDerived, Channel: broker.ChannelTrigger, Received: f.Seen}
	switch {
	case f.Sig != nil:
		id, ok := h.Tokens.Match(f.Sig.Role, f.Sig.Verify)
		if !ok {
			return triggers.Reject(status.CodeBadSignature, "the signature for %s does not verify with the operator token or %s's token", f.Sig.Role, f.Sig.Role)
		}
		s.From, s.Trusted = id.Role, id.Operator
	case !h.Team().Triggers.AllowUnsigned:
		return triggers.Reject(status.CodeUnsigned, "the file is not signed and settings.json triggers.allowUnsigned is false")
	default:
		if err := h.checkUnsignedClaim(f); err != nil {
			return err
		}
		s.From, s.Mark = roles.RoleUnverified, unverifiedMark
	}
	others, isOthers := roles.CutOthers(f.Target)
	switch {
	case f.Target == roles.RoleAll:
		s.Broadcast = true
	case isOthers:
		skip, err := h.Team().Resolve(others)
		if err != nil || skip.Kind != roles.TargetMember {
			return triggers.Reject(status.CodeInvalidTarget, "%s names no team member", f.Target)
		}
		for _, m := range h.Team().Others(skip.Member.Role) {
			s.Recipients = append(s.Recipients, m.Role)
		}
		s.TargetName = roles.OthersTarget(skip.Member.Role)
	default:
		s.Target = roles.ExpandWorkers(f.Target)
	}
	ack, err := h.Broker.Submit(ctx, s)
	if err != nil {
		code := proto.CodeOf(err)
		if code == status.CodeJournalUnavailable || code == status.CodeInternal {
			return err // transient: the file stays and is retried
		}
		return triggers.Reject(code, "%s", proto.MessageOf(err))
	}
	if !ack.Dedupe {
		return nil
	}
	if ack.MessageID == s.MessageID {
		if err := h.checkSameMessage(ctx, s); err != nil {
			return err
		}
	}
	return h.noteRepeat(ctx, ack.MessageID, f)
}

// noteRepeat leaves the trace of a trigger file that repeated the committed
// message first (SPEC §7: nothing is silently dropped): a "repeated" event
// on that message naming the file and the id it carried. The file is not
// delivered again; an error is transient and the file is retried.
func (h *Hub) noteRepeat(ctx context.Context, first string, f triggers.File) error {
	_, err := h.Ledger.Advance(ctx, journal.Repeated(first, string(broker.ChannelTrigger), f.Name, f.MessageID))
	if err != nil {
		return fmt.Errorf("record trigger file %s as a repeat of %s: %w", f.Name, first, err)
	}
	h.log.Info("trigger file repeats a committed message; not delivered again", "file", f.Name, "id", f.MessageID, "first", first)
	return nil
}

// checkUnsignedClaim applies owner binding (SPEC §4) to the role an unsigned
// file's header claims: it is recorded as unverified, but a file that says
// it comes from a background agent may still only go to that agent's owner.
func (h *Hub) checkUnsignedClaim(f triggers.File) error {
	hd, _, ok := roles.ParseHeader(f.Content)
	if !ok {
		return nil
	}
	role, known := h.Team().RoleForHeader(hd.Role)
	if !known {
		return triggers.Reject(status.CodeRoleMismatch, "header %s names no role of this team", hd.Role)
	}
	m, member := h.Team().Lookup(role)
	if !member || !m.Background || m.Role != role {
		return nil
	}
	t, err := h.Team().Resolve(roles.ExpandWorkers(f.Target))
	if err == nil && t.Kind == roles.TargetMember && t.Member.Role == m.Owner {
		return nil
	}
	return triggers.Reject(status.CodeOwnerBindingViolation, "%s may message %s only", role, m.Owner)
}

// checkSameMessage decides a trigger file whose message id the ledger
// already holds: the same message again (same sender, same body) passes
// (noteRepeat records it); anything else is refused as duplicate_id rather
// than dropped.
func (h *Hub) checkSameMessage(ctx context.Context, s broker.Submission) error {
	prev, err := h.Ledger.Get(ctx, s.MessageID)
	if err != nil {
		return fmt.Errorf("look up message %s: %w", s.MessageID, err) // transient: retried
	}
	sender := s.From
	if hd, _, ok := roles.ParseHeader(s.Content); ok && s.Trusted {
		if r, known := h.Team().RoleForHeader(hd.Role); known {
			sender = r
		}
	}
	if prev.SenderRole == sender && bodyOf(prev.RawBody) == bodyOf(s.Text()) {
		return nil
	}
	return triggers.Reject(status.CodeDuplicateID, "message id %s is already in the ledger from %s (channel %s) with other content or another sender", s.MessageID, prev.SenderRole, prev.Channel)
}

// bodyOf strips a role header.
func bodyOf(content string) string {
	if _, body, ok := roles.ParseHeader(content); ok {
		return body
	}
	return content
}
