// Package journaltest generates realistic ledger contents for tests and
// benchmarks of the journal and the packages built on it.
package journaltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"hm/internal/ground/status"
	"hm/roles"

	"hm/journal"
)

// BaseTimeMs is the timestamp of the first generated message
// (2025-03-01T09:00:00Z); later ones follow at 0.2–90 s intervals.
const BaseTimeMs int64 = 1740819600000

// Generate appends n generated messages (see Messages) to l in batches of
// 1000 via AppendBatch. The same seed gives the same rows.
func Generate(ctx context.Context, l *journal.Ledger, n int, seed int64) error {
	return GenerateConfig(ctx, l, Config{N: n, Seed: seed})
}

// Config describes a generated ledger for GenerateConfig and
// MessagesConfig.
type Config struct {
	N    int   // messages
	Seed int64 // the same seed gives the same rows
	// LastSession, when positive, makes the last LastSession messages
	// (at most N) one session of their own: a ledger whose current
	// session is large. Zero gives Messages' sessions of a few hundred.
	LastSession int
}

// GenerateConfig appends the messages MessagesConfig(c) returns to l in
// batches of 1000 via AppendBatch.
func GenerateConfig(ctx context.Context, l *journal.Ledger, c Config) error {
	ms := MessagesConfig(c)
	for len(ms) > 0 {
		k := min(len(ms), 1000)
		if err := l.AppendBatch(ctx, ms[:k]); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		ms = ms[k:]
	}
	return nil
}

type member struct {
	role, header string
}

var (
	mainRoles = []member{{"architect", "ARCH"}, {"builder", "BUILDER"}, {"oracle", "ORACLE"}}
	bgRoles   = []member{{"builder-bg-1", "BUILDER-BG-1"}, {"builder-bg-2", "BUILDER-BG-2"}, {"builder-bg-3", "BUILDER-BG-3"}}
	userRole  = member{"user", "USER"}

	subjects = []string{"the broker", "trigger watcher", "ledger writer", "handoff report", "pane queue", "telegram relay",
		"attach handler", "rate limiter", "session counter", "settings loader", "bg slot 2", "the FTS index", "hm-send fallback", "token check"}
	verbs = []string{"refactored", "reviewed", "benchmarked", "fixed", "documented", "profiled", "rewrote", "tested", "split", "merged",
		"deployed", "rolled back", "instrumented", "simplified"}
	details = []string{"p99 went from 14ms to 3ms", "race detector is clean", "needs a second look at shutdown ordering",
		"golden files regenerated", "the fuzz corpus found a panic on empty input", "WAL checkpoint stalls under load",
		"bracketed paste is detected correctly now", "Enter delay of 250ms is required for codex", "dedupe works across reconnects",
		"the 0600 mode is enforced on hub-token", "UTF-16 BOM files decode fine", "owner binding rejects bg-1 -> oracle",
		"obligation reminder fires once", "journal_unavailable surfaces when the disk is full", "ünïcödé and emoji 🚀 survive the round trip"}
	errorCodes = []status.Code{status.CodeExpiredSession, status.CodeNoRoute, "delivery_timeout", "pane_exited", status.CodeInvalidTarget}
)

type obligationRef struct {
	ref     string
	owner   string
	session string
}

// Messages returns n deterministic, realistic messages: sessions of a few
// hundred messages ("app-session-1", ...), role headers with per-sender
// sequence numbers, [ACK REQUIRED]/[URGENT]/[FYI]/[TASK] tags, DECISION:/
// TASK:/FINDING:/BLOCKER: lines (as Signals), obligations that later
// replies close ("ACK ARCH #12", as Refs), multi-line bodies, unicode, and a
// mix of channels, statuses (acked, routed, failed with error codes, and
// brokered ones mostly in the last session) and ack statuses. Timestamps
// start at BaseTimeMs and only grow.
func Messages(n int, seed int64) []*journal.Message {
	return MessagesConfig(Config{N: n, Seed: seed})
}

// MessagesConfig is Messages with the options of c; Messages(n, seed) is
// MessagesConfig(Config{N: n, Seed: seed}).
func MessagesConfig(c Config) []*journal.Message {
	n, seed := c.N, c.Seed
	bigFrom := -1 // the index where the large last session starts
	if c.LastSession > 0 {
		bigFrom = max(0, n-c.LastSession)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed5eed))
	out := make([]*journal.Message, 0, n)
	ts := BaseTimeMs
	session := 1
	left := 200 + r.IntN(400)
	seqs := map[string]int64{}
	var open []obligationRef
	var tasks []string // refs of messages that carry TASK/BLOCKER lines
	lastSession := false
	for i := range n {
		if i == bigFrom {
			if i > 0 {
				session++
			}
			left = n - i
			seqs = map[string]int64{}
			open, tasks = nil, nil
		}
		if left == 0 {
			session++
			left = 200 + r.IntN(400)
			seqs = map[string]int64{}
			open, tasks = nil, nil
		}
		left--
		if n-i <= left { // the remaining messages all fall in this session
			lastSession = true
		}
		sid := roles.SessionID(session)
		ts += 200 + r.Int64N(90_000)

		sender := pickSender(r)
		target := pickTarget(r, sender)
		seqs[sender.role]++
		seq := seqs[sender.role]

		var tags []string
		for _, tg := range []struct {
			tag string
			p   float64
		}{{"ACK REQUIRED", 0.10}, {"URGENT", 0.03}, {"FYI", 0.10}, {"TASK", 0.05}} {
			if r.Float64() < tg.p {
				tags = append(tags, tg.tag)
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "(%s #%d): ", sender.header, seq)
		for _, tg := range tags {
			fmt.Fprintf(&b, "[%s] ", tg)
		}
		var refs []string
		// Answer an obligation owned by this sender.
		for j, o := range open {
			if o.owner == sender.role && o.session == sid && r.Float64() < 0.7 {
				fmt.Fprintf(&b, "ACK %s — ", o.ref)
				refs = append(refs, o.ref)
				open = append(open[:j], open[j+1:]...)
				break
			}
		}
		if len(tasks) > 0 && r.Float64() < 0.15 {
			k := r.IntN(len(tasks))
			fmt.Fprintf(&b, "re %s: done. ", tasks[k])
			refs = append(refs, tasks[k])
			tasks = append(tasks[:k], tasks[k+1:]...)
		}
		sentences := 1 + r.IntN(4)
		for s := range sentences {
			if s > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s %s %s; %s.", cap1(pick(r, verbs)), pick(r, subjects), pick(r, []string{"today", "again", "as asked", "for #" + fmt.Sprint(r.IntN(200))}), pick(r, details))
		}
		var signals []journal.Signal
		if r.Float64() < 0.18 {
			kinds := []string{journal.SignalDecision, journal.SignalTask, journal.SignalFinding, journal.SignalBlocker}
			nsig := 1 + r.IntN(2)
			for range nsig {
				k := kinds[r.IntN(len(kinds))]
				text := fmt.Sprintf("%s %s", cap1(pick(r, verbs)), pick(r, subjects))
				fmt.Fprintf(&b, "\n%s: %s", k, text)
				signals = append(signals, journal.Signal{Kind: k, Text: text})
				if k == journal.SignalTask || k == journal.SignalBlocker {
					tasks = append(tasks, fmt.Sprintf("%s #%d", sender.header, seq))
				}
			}
		}
		if r.Float64() < 0.05 {
			b.WriteString("\n```\nfunc main() { fmt.Println(\"hm | pipes | and `ticks`\") }\n```")
		}

		m := &journal.Message{
			MessageID:    fmt.Sprintf("hm-%d-%06x", ts, r.Uint32()&0xffffff),
			SessionID:    sid,
			SenderRole:   sender.role,
			TargetRole:   target,
			Channel:      "ws",
			Direction:    journal.DirectionOutbound,
			Seq:          seq,
			Header:       sender.header,
			Priority:     status.PriorityNormal,
			SentAtMs:     ts - r.Int64N(50),
			BrokeredAtMs: ts,
			RawBody:      b.String(),
			Signals:      signals,
			Refs:         refs,
		}
		switch {
		case sender.role == "user" && r.Float64() < 0.5:
			m.Channel = "telegram"
			m.Direction = journal.DirectionInbound
			m.MessageID = fmt.Sprintf("telegram-in-%d", 100000+i)
		case r.Float64() < 0.15:
			m.Channel = "trigger"
		}
		_, body, _ := roles.ParseHeader(m.RawBody)
		m.Priority = roles.Priority(m.Priority, body)
		if len(tags) > 0 {
			m.MetadataJSON = fmt.Sprintf(`{"tags":["%s"]}`, strings.Join(tags, `","`))
		}
		if slices.Contains(tags, "ACK REQUIRED") && target != "user" {
			ref := fmt.Sprintf("%s #%d", sender.header, seq)
			m.Obligation = &journal.Obligation{OwnerRole: target, RequesterRole: sender.role, Ref: ref}
			open = append(open, obligationRef{ref: ref, owner: target, session: sid})
		}
		setStatus(r, m, lastSession)
		out = append(out, m)
	}
	return out
}

func setStatus(r *rand.Rand, m *journal.Message, lastSession bool) {
	p := r.Float64()
	pending := 0.02
	if lastSession {
		pending = 0.12
	}
	switch {
	case p < pending:
		m.Status = status.Brokered
	case p < pending+0.07:
		m.Status = status.Failed
		m.ErrorCode = errorCodes[r.IntN(len(errorCodes))]
		m.Attempt = 1 + r.Int64N(3)
	case p < pending+0.37:
		m.Status = status.Routed
		m.AckStatus = status.AcceptedUnverified
		if r.Float64() < 0.4 {
			m.AckStatus = status.DeliveredWebSocket
		}
		m.Attempt = 1
	default:
		m.Status = status.Acked
		m.AckStatus = status.DeliveredVerified
		m.Attempt = 1
	}
	m.UpdatedAtMs = m.BrokeredAtMs
	if m.Status != status.Brokered {
		m.UpdatedAtMs += 30 + r.Int64N(3000)
	}
}

func pickSender(r *rand.Rand) member {
	p := r.Float64()
	switch {
	case p < 0.30:
		return mainRoles[0]
	case p < 0.60:
		return mainRoles[1]
	case p < 0.80:
		return mainRoles[2]
	case p < 0.90:
		return bgRoles[r.IntN(len(bgRoles))]
	default:
		return userRole
	}
}

func pickTarget(r *rand.Rand, sender member) string {
	switch {
	case strings.HasPrefix(sender.role, "builder-bg-"):
		return "builder"
	case sender.role == "user":
		return "architect"
	case r.Float64() < 0.05:
		return "user"
	}
	for {
		t := mainRoles[r.IntN(len(mainRoles))].role
		if t != sender.role {
			return t
		}
	}
}

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func cap1(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
