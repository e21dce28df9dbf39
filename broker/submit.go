// This file is the submit path: validation, sequencing, the ledger commit
// and routing; resolve.go finds the recipients, record.go builds the row,
// ack.go answers.

package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// Channels recorded in the ledger.
const (
	ChannelWS       = "ws"
	ChannelTrigger  = "trigger"
	ChannelTelegram = "telegram"
	ChannelUser     = "user"
	ChannelSystem   = "system"
)

// Submission is one message offered to the router, from any channel.
type Submission struct {
	// From is the authenticated sender role ("user" for the human,
	// "system" for the hub).
	From string
	// Trusted senders (the operator, trigger files) may send as any role:
	// a header names the effective sender.
	Trusted bool
	// Target is a target name (§3); Recipients, when set, overrides it
	// with an explicit list of member roles (trigger group files), stored
	// under TargetName.
	Target     string
	Recipients []string
	TargetName string
	Broadcast  bool

	Content string
	// Mark is text the hub puts before Content (the "[unverified sender] "
	// of an unsigned trigger file). The size limit applies to Content, what
	// the sender wrote, not to the hub's mark.
	Mark      string
	MessageID string
	// HubID says MessageID was made by the hub itself (an internal/ground/msgid
	// constructor) and may lie in a reserved namespace. Ids from clients,
	// including trigger files that name one, never set it.
	HubID       bool
	Priority    string
	AckRequired bool
	Wait        time.Duration
	Metadata    json.RawMessage
	Channel     string
	Direction   string
	// Raw system messages (session lines, briefings) are stored and typed
	// without a role header; they are still numbered.
	Raw bool
	// SessionScoped marks a lifecycle notice of the hub (System only): a
	// session line, a slot's brief or end, a reminder, a line about a
	// waiting pane. It speaks of this session's panes and numbers, so
	// when the session ends before it is delivered it expires with it
	// instead of being typed into the next one as delayed (recovery.go).
	SessionScoped bool
	SentAt        time.Time
	// Received is when the hub got the submission (for ackLatencyMs).
	Received time.Time
}

// Text is the message as the hub stores it: the hub's mark, then what the
// sender wrote.
func (s Submission) Text() string { return s.Mark + s.Content }

// refuse makes a refusal with code. Its reason is words: a leading
// "<code>: " (an error that names its code, such as roles' unknown target)
// is dropped, since the ACK's status says it.
func refuse(code status.Code, format string, args ...any) error {
	return proto.Errorf(code, strings.TrimPrefix(fmt.Sprintf(format, args...), string(code)+": "))
}

// Submit validates, sequences, commits and routes one message. The returned
// Ack is sent to the client; err is non-nil for refusals (ok:false), carrying
// a *proto.Error.
func (b *Broker) Submit(ctx context.Context, s Submission) (proto.Ack, error) {
	return b.end(ctx, b.begin(ctx, s))
}

// queuedSubmit is a submission whose commit has been queued (or that was
// answered at once). begin creates it; end waits for the commit and routes.
type queuedSubmit struct {
	s     Submission
	ack   proto.Ack
	err   error // a refusal known before anything was queued
	rt    route
	wait  func(context.Context) (journal.Message, error)
	dupOf string // duplicate of an earlier (sender, N, body)
	// sender is the effective sender role: dedupe by messageId is per
	// sender (SPEC §5.3 duplicate_id).
	sender string
	st     *senderSeq
	d      seqDecision
	body   string
	// obliges: the message opens an [ACK REQUIRED] obligation, which
	// RunReminders is told of once it commits.
	obliges bool
	// wake is set by route while the sender waits for a definitive stage
	// (waitMs); awaitDefinitive ends the wait.
	wake chan struct{}
}

// begin does everything up to queueing the commit: validation, target
// resolution, owner binding, the header and sequence rules. Calls made in
// order by one goroutine commit in that order, so a connection can have many
// submissions in flight (pipelining) while end calls complete in order.
func (b *Broker) begin(ctx context.Context, s Submission) *queuedSubmit {
	if s.Received.IsZero() {
		s.Received = b.now()
	}
	p := &queuedSubmit{s: s, ack: proto.Ack{MessageID: s.MessageID}}
	p.err = b.queue(ctx, p)
	return p
}

// end waits for p's commit, routes the message and returns its ACK, after
// the waitMs wait for a definitive stage when the sender asked for one.
func (b *Broker) end(ctx context.Context, p *queuedSubmit) (proto.Ack, error) {
	ack, err := b.route(ctx, p)
	if p.wake != nil {
		ack = b.awaitDefinitive(ctx, p, ack)
	}
	return b.sealAck(p, ack, err)
}

// route waits for p's commit and routes the message: end without the
// waitMs wait. When it leaves p.wake set, the sender asked to wait and the
// stage is not definitive yet: awaitDefinitive must follow.
func (b *Broker) route(ctx context.Context, p *queuedSubmit) (proto.Ack, error) {
	if p.err != nil {
		return p.ack, p.err
	}
	return b.finish(ctx, p)
}

// awaitDefinitive waits up to p's waitMs for a definitive stage (SPEC §5.2)
// and ends p's wait.
func (b *Broker) awaitDefinitive(ctx context.Context, p *queuedSubmit, ack proto.Ack) proto.Ack {
	defer b.removeWaiter(p.s.MessageID, p.wake)
	return b.waitDefinitive(ctx, ack, p.s.Wait, p.wake)
}

// sealAck completes p's ACK: type, session, latency and the refusal.
func (b *Broker) sealAck(p *queuedSubmit, ack proto.Ack, err error) (proto.Ack, error) {
	ack.Type = proto.TypeSendAck
	ack.SessionID = b.cfg.SessionID
	if ack.Warnings == nil {
		ack.Warnings = []string{}
	}
	ack.AckLatencyMs = float64(time.Since(p.s.Received).Microseconds()) / 1000
	if err != nil {
		ack.Accepted = false
		ack.Refuse(proto.CodeOf(err), proto.MessageOf(err))
	}
	return ack, err
}

// queue validates p, resolves its route, applies the sequence rules and
// queues its commit; it is begin's work.
func (b *Broker) queue(ctx context.Context, p *queuedSubmit) error {
	s := &p.s
	if s.MessageID != "" && !msgid.Valid(s.MessageID) {
		return refuse(status.CodeBadRequest, "messageId must be 1-%d ASCII letters, digits or -_.: starting with a letter or digit", msgid.MaxLen)
	}
	if s.MessageID != "" && !s.HubID && msgid.Reserved(s.MessageID) {
		return refuse(status.CodeReservedID, "messageId %s is in a namespace the hub keeps for its own rows (%s...); choose another or let the hub make one",
			s.MessageID, strings.Join(msgid.ReservedPrefixes(), "..., "))
	}
	if !utf8.ValidString(s.Content) {
		s.Content = strings.ToValidUTF8(s.Content, "\uFFFD")
	}
	if strings.TrimSpace(s.Content) == "" {
		return refuse(status.CodeEmptyContent, "message has no content")
	}
	if len(s.Content) > proto.MaxMessageFrame {
		return refuse(status.CodeTooLarge, "content is %d bytes; the limit is %d", len(s.Content), proto.MaxMessageFrame)
	}
	s.Content, s.Mark = s.Text(), ""
	if err := roles.CheckHeader(s.Content); err != nil {
		return refuse(status.CodeBadHeader, "%v", err)
	}
	if !status.ValidPriority(s.Priority) {
		return refuse(status.CodeBadRequest, "priority %q is none of %s", clip(s.Priority, 64), strings.Join(status.Priorities, ", "))
	}
	if _, ok := metadataJSON(s.Metadata); !ok {
		return refuse(status.CodeBadRequest, "metadata must be a JSON object")
	}

	// Effective sender: the authenticated role, or for trusted senders the
	// role named by the header.
	sender := s.From
	h, body, hasHeader := roles.ParseHeader(s.Content)
	if hasHeader {
		hdrRole, known := b.Team().RoleForHeader(h.Role)
		switch {
		case s.Trusted && known:
			sender = hdrRole
		case s.Trusted:
			return refuse(status.CodeRoleMismatch, "header %s names no role of this team", h.Role)
		case !known || hdrRole != sender:
			return refuse(status.CodeRoleMismatch, "header %s does not match the sender %s", h.Role, sender)
		}
		if strings.TrimSpace(body) == "" {
			return refuse(status.CodeEmptyContent, "message has a header (%s #%d) and no content after it", h.Role, h.Seq)
		}
	}
	if sender == "" {
		sender = roles.RoleUser
	}
	if hasHeader && h.Seq == 0 {
		// "#0" names the sender but asks the hub to number the message
		// (hm-send's trigger-file fallback cannot know the next number).
		s.Content, hasHeader = body, false
	}
	p.ack.Header = b.Team().HeaderFor(sender)
	p.sender = sender

	rt, err := b.resolve(sender, *s)
	if err != nil {
		return err
	}
	p.rt = rt
	// A message id seen before is not delivered again: Append finds it
	// atomically in the writer (ErrDuplicate) and the stored state is
	// repeated; nothing is committed for it.
	if s.MessageID == "" {
		s.MessageID = msgid.New(b.now())
	}
	p.ack.MessageID = s.MessageID

	// The sender's lock is held until the commit is queued: sequence order
	// is queue order is commit order.
	st := b.seqs.lock(sender)
	defer st.unlock()
	if owner, fresh := st.ids.claim(s.MessageID, sender); !fresh {
		// Known before it takes a number: the sender's next message, maybe
		// already behind it on the connection, keeps the number it expects.
		if owner != sender {
			return refuseDuplicateID(s.MessageID)
		}
		p.dupOf = s.MessageID
		return nil
	}
	claimed := true
	defer func() {
		if claimed {
			st.ids.release(s.MessageID)
		}
	}()
	d := st.decide(h, hasHeader, body)
	if d.Lookup {
		d.Duplicate = b.ledgerDuplicate(ctx, sender, d.Seq, body)
	}
	if d.Duplicate != "" {
		p.dupOf = d.Duplicate
		return nil
	}
	if d.Prefix && d.Seq >= roles.MaxSeq && !(s.Raw && sender == roles.RoleSystem) {
		// A header the hub made must parse: after N = 2^53-1 there is none.
		return refuse(status.CodeBadHeader, "%s has used the last header number (%d) this session", p.ack.Header, int64(roles.MaxSeq-1))
	}
	content := s.Content
	if d.Prefix && !(s.Raw && sender == roles.RoleSystem) {
		content = roles.Header{Role: p.ack.Header, Seq: d.Seq}.String() + s.Content
		body = s.Content
	}
	m := b.ledgerMessage(*s, sender, rt, d.Seq, p.ack.Header, content, body)
	if d.Warning != "" {
		p.ack.Warnings = append(p.ack.Warnings, d.Warning)
	}
	wait, err := b.deps.Ledger.AppendQueued(ctx, m)
	if err != nil {
		b.log.Error("ledger commit failed", "messageId", s.MessageID, "err", err)
		return refuse(status.CodeJournalUnavailable, "ledger cannot commit: %v", err)
	}
	st.commit(d, body, s.MessageID)
	claimed = false
	p.wait, p.st, p.d, p.body, p.obliges = wait, st, d, body, m.Obligation != nil
	p.ack.Seq = d.Seq
	return nil
}

// ledgerDuplicate looks for an earlier message of sender's with number seq
// and the same body in this session's ledger rows: the sequencer keeps
// only its recent numbers in memory. It returns the first copy's id, or ""
// (also when the lookup fails: the message is then accepted with a
// seq_reused warning rather than refused).
func (b *Broker) ledgerDuplicate(ctx context.Context, sender string, seq int64, body string) string {
	rows, err := b.deps.Ledger.BySenderSeq(ctx, b.cfg.SessionID, sender, seq)
	if err != nil {
		b.log.Warn("duplicate lookup failed", "sender", sender, "seq", seq, "err", err)
		return ""
	}
	for _, r := range rows {
		if bodyOf(r.RawBody) == body {
			return r.MessageID
		}
	}
	return ""
}

// finish waits for p's commit (or the first copy of a duplicate), routes the
// message and builds the ACK; it is end's work for submissions begin queued.
func (b *Broker) finish(ctx context.Context, p *queuedSubmit) (proto.Ack, error) {
	ack := p.ack
	if p.dupOf != "" {
		// The first copy may still be committing: give it a moment.
		deadline := time.Now().Add(2 * time.Second)
		for {
			prev, err := b.deps.Ledger.Get(ctx, p.dupOf)
			if err == nil {
				return p.rt.withTargets(b.repeatAck(prev), prev), nil
			}
			if !errors.Is(err, journal.ErrNotFound) || time.Now().After(deadline) {
				return ack, refuse(status.CodeJournalUnavailable, "look up duplicate: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Once queued, the outcome is the writer's: the wait is bounded by the
	// broker's lifetime, never by the client's connection, so a sender that
	// hangs up mid-burst cannot strand a row that commits.
	committed, err := p.wait(b.ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// The hub is stopping and the row may still commit: its
			// number stays taken, and the next session's Recover
			// routes it if it did.
			return ack, refuse(status.CodeJournalUnavailable, "hub shutting down; the message may still commit")
		}
		// The writer says nothing new was stored: take the number back so
		// the sender's sequence stays gapless.
		p.st.mu.Lock()
		p.st.forget(p.d, p.body, p.s.MessageID)
		p.st.mu.Unlock()
		if errors.Is(err, journal.ErrDuplicate) {
			ack, err := b.duplicateAck(ack, committed, p.sender)
			if err == nil {
				ack = p.rt.withTargets(ack, committed)
			}
			return ack, err
		}
		b.log.Error("ledger commit failed", "messageId", p.s.MessageID, "err", err)
		return ack, refuse(status.CodeJournalUnavailable, "ledger cannot commit: %v", err)
	}
	ack.OK, ack.Accepted = true, true
	ack.SetStage(status.AcceptedUnverified)
	ack = p.rt.withTargets(ack, committed)
	if p.obliges {
		b.remindKick.Kick()
	}
	// A sender that waits for a definitive stage is registered before the
	// message is dispatched, so no wake-up is missed; the wait itself is
	// the caller's (awaitDefinitive), so that a connection's later sends
	// are not held behind it.
	var wake chan struct{}
	if p.s.Wait > 0 {
		wake = b.addWaiter(p.s.MessageID)
	}
	if b.dispatch(committed, p.rt, "") {
		ack.SetStage(status.DeliveredWebSocket)
	}
	if b.forwardRemote(ctx, committed, p.rt) {
		ack.SetStage(status.AcceptedQueuedRemote) // in the ledger; the outbox forwards it
	}
	if wake != nil && ack.Stage().Delivered() {
		b.removeWaiter(p.s.MessageID, wake)
		wake = nil
	}
	p.wake = wake
	return ack, nil
}

// withTargets names the recipients in the ACK of a message for several
// (SPEC §5.2 broadcast "targets"), when row, the stored message the ACK is
// about, went to this route's target (the first copy of a duplicate too).
func (rt route) withTargets(ack proto.Ack, row journal.Message) proto.Ack {
	if row.TargetRole != rt.name || (rt.kind != roles.TargetAll && len(rt.members) <= 1) {
		return ack
	}
	ack.Targets = make([]string, 0, len(rt.members))
	for _, mem := range rt.members {
		ack.Targets = append(ack.Targets, mem.Role)
	}
	return ack
}

// metadataJSON is the metadata_json stored for a send's metadata: "{}"
// when it is absent or null, its text when it is a JSON object; ok is
// false for anything else (queue refuses it).
func metadataJSON(raw json.RawMessage) (meta string, ok bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "{}", true
	}
	if t[0] != '{' || !json.Valid(t) {
		return "{}", false
	}
	return string(t), true
}
