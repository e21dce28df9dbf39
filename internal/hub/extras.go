package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/broker/telegram"
	"hm/journal"
	"hm/journal/report"
	"hm/roles"
	"hm/triggers"
)

// startExtras starts the components the broker depends on and fills deps.
func (h *Hub) startExtras(ctx context.Context, deps *broker.Deps) error {
	if !h.opts.NoPanes {
		h.panes = newPaneSet(h.log.With("component", "panes"), h.Team)
		h.slots = h.newSlots() // before the owner's pane, whose exit ends them
		h.startPanes(h.panes)
		deps.Panes = h.panes
		h.extras = append(h.extras, h.panes)
	}
	cfg, err := telegram.LoadConfig(h.Layout.Root, h.Team.Telegram.ChatID, h.Team.Telegram.Allowlist, h.opts.Getenv)
	if err != nil {
		return fmt.Errorf("telegram config: %w", err)
	}
	if cfg.Enabled() {
		cfg.Logger = h.log.With("component", "telegram")
		if h.opts.TelegramPoll > 0 {
			cfg.PollTimeout = h.opts.TelegramPoll
		}
		relay, err := telegram.New(cfg, telegramStore{h}, h.telegramDeliver)
		if err != nil {
			return fmt.Errorf("telegram relay: %w", err)
		}
		h.relay = relay
		deps.Telegram = relay
	}
	if h.slots != nil {
		deps.Background = h.slots
		h.extras = append(h.extras, slotComponent{h.slots})
	}
	return nil
}

// mountExtras adds the components' HTTP endpoints.
func (h *Hub) mountExtras(ctx context.Context, mux *http.ServeMux) {
	// Mounted even without panes, so that /attach/<x> gets a clear 404.
	mux.Handle("/attach/", agent.AttachHandlerContext(ctx, h.lookupPane, h.authorizeAttach, h.log.With("component", "attach")))
	mux.HandleFunc("/status", h.serveStatus)
}

func (h *Hub) lookupPane(name string) (*agent.Pane, bool) {
	if h.slots != nil {
		if p, ok := h.slots.Lookup(name); ok {
			return p, true
		}
	}
	if h.panes == nil {
		return nil, false
	}
	return h.panes.lookup(name)
}

// startup types each pane's first message (session line, brief, briefing)
// and re-routes what earlier sessions left pending.
func (h *Hub) startup(ctx context.Context) {
	now := time.Now()
	opts := report.Options{SessionID: h.SessionID(), Session: h.Session, Now: now, Roles: report.RolesFromTeam(h.Team)}
	briefing, err := report.Briefing(ctx, h.Ledger, opts)
	if err != nil {
		h.log.Error("build briefing", "err", err)
	} else if err := report.WriteBriefing(h.Layout.Briefing(), briefing); err != nil {
		h.log.Error("write briefing", "err", err)
	}
	if h.panes != nil {
		for _, m := range h.Team.Members() {
			if !h.panes.Hosted(m.Role) {
				continue
			}
			var content string
			if m.Role == "architect" {
				content = report.ArchitectFirstMessage(briefing, now) + "\n\n" + h.Team.Brief(m.Role)
			} else {
				content = report.PaneFirstMessage(m.Role, now, ".squidrun/handoffs/session.md") + "\n\n" + h.Team.Brief(m.Role)
			}
			if _, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: m.Role, Content: content, Raw: true,
				Channel: broker.ChannelSystem, MessageID: fmt.Sprintf("session-%d-%s", h.Session, m.Role)}); err != nil {
				h.log.Warn("startup message", "role", m.Role, "err", err)
			}
		}
	}
	delivered, expired, err := h.Broker.Recover(ctx)
	if err != nil {
		h.log.Error("recover pending messages", "err", err)
	} else if delivered+expired > 0 {
		h.log.Info("pending messages from earlier sessions", "delivered", delivered, "expired", expired)
	}
}

// runExtras starts the components' loops under ctx, tracked by wg.
func (h *Hub) runExtras(ctx context.Context, wg *sync.WaitGroup) {
	rescan := h.opts.TriggerRescan
	if rescan <= 0 {
		rescan = 2 * time.Second
	}
	w := triggers.NewWatcher(h.Layout.Triggers(), h.triggerSink, triggers.Options{Rescan: rescan, Logger: h.log.With("component", "triggers")})
	h.watcher = w
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Error("trigger watcher stopped", "err", err)
		}
	}()
	if h.relay != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.relay.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Error("telegram relay stopped", "err", err)
			}
		}()
	}
	if h.slots != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.slots.Run(ctx)
		}()
	}
	every := h.opts.HandoffEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick(ctx, every, func() { _, _ = h.writeHandoff(ctx) })
	}()
}

// tick calls fn every d until ctx ends.
func tick(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// stopExtras stops components in reverse order.
func (h *Hub) stopExtras(ctx context.Context) {
	for i := len(h.extras) - 1; i >= 0; i-- {
		h.extras[i].stop(ctx)
	}
}

// writeHandoff rebuilds handoffs/session.md if the ledger changed it.
func (h *Hub) writeHandoff(ctx context.Context) ([]byte, error) {
	data, err := report.Handoff(ctx, h.Ledger, report.Options{SessionID: h.SessionID(), Session: h.Session, Roles: report.RolesFromTeam(h.Team)})
	if err != nil {
		h.log.Warn("build handoff", "err", err)
		return nil, err
	}
	if _, err := report.WriteHandoff(h.Layout.Handoffs(), data); err != nil {
		h.log.Warn("write handoff", "err", err)
		return nil, err
	}
	return data, nil
}

func (h *Hub) finalHandoff(ctx context.Context) { _, _ = h.writeHandoff(ctx) }

// triggerSink commits one trigger file through the broker (SPEC §7).
func (h *Hub) triggerSink(ctx context.Context, f triggers.File) error {
	s := broker.Submission{From: roles.RoleUser, Trusted: true, Content: f.Content, MessageID: f.MessageID,
		Channel: broker.ChannelTrigger, Received: f.Seen}
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

// telegramDeliver commits an inbound Telegram update and queues it for the
// architect.
func (h *Hub) telegramDeliver(ctx context.Context, in telegram.Inbound, text string) error {
	meta, _ := json.Marshal(map[string]any{"chatId": in.ChatID, "sender": in.Sender, "updateId": in.UpdateID})
	_, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleUser, Target: "architect", Content: text,
		MessageID: "telegram-in-" + strconv.FormatInt(in.UpdateID, 10), Channel: broker.ChannelTelegram, Direction: "inbound",
		Metadata: meta, SentAt: in.Date})
	if err != nil && proto.CodeOf(err) == proto.CodeJournalUnavailable {
		return err
	}
	if err != nil {
		h.log.Warn("telegram update refused", "update", in.UpdateID, "err", err)
	}
	return nil
}

// telegramStore keeps the relay's state in the ledger.
type telegramStore struct{ h *Hub }

func (s telegramStore) KVGet(ctx context.Context, key string) (string, bool, error) {
	return s.h.Ledger.KVGet(ctx, key)
}

func (s telegramStore) KVSet(ctx context.Context, key, value string) error {
	return s.h.Ledger.KVSet(ctx, key, value)
}

func (s telegramStore) RecordPart(ctx context.Context, p telegram.Part) error {
	meta, _ := json.Marshal(map[string]any{"parent": p.ParentID, "part": p.Index, "parts": p.Total, "chatId": p.ChatID})
	_, err := s.h.Ledger.Append(ctx, &journal.Message{
		MessageID: p.ID, SessionID: s.h.SessionID(), SenderRole: p.SenderRole, TargetRole: roles.RoleTelegram,
		Channel: broker.ChannelTelegram, Direction: "outbound", Header: s.h.Team.HeaderFor(p.SenderRole),
		RawBody: p.Text, MetadataJSON: string(meta), Status: "recorded",
	})
	if errors.Is(err, journal.ErrDuplicate) {
		existing, gerr := s.h.Ledger.Get(ctx, p.ID)
		if gerr == nil && existing.Status == "acked" {
			return fmt.Errorf("part %s: %w", p.ID, telegram.ErrPartDelivered)
		}
		return nil // recorded earlier but not delivered: send it again
	}
	return err
}

func (s telegramStore) FinishPart(ctx context.Context, partID string, ok bool, reason string) error {
	// A part is recorded before the API call; Telegram's answer settles it.
	c := journal.Change{MessageID: partID, Status: "acked", AckStatus: proto.StatusDeliveredVerified, Event: "telegram_sent"}
	if !ok {
		c = journal.Change{MessageID: partID, Status: "failed", ErrorCode: "telegram_failed", Event: "failed", Detail: map[string]any{"reason": reason}}
	}
	_, err := s.h.Ledger.Advance(ctx, c)
	return err
}

func (s telegramStore) RecordRefused(ctx context.Context, in telegram.Inbound) error {
	meta, _ := json.Marshal(map[string]any{"chatId": in.ChatID, "sender": in.Sender, "updateId": in.UpdateID})
	_, err := s.h.Ledger.Append(ctx, &journal.Message{
		MessageID: "telegram-refused-" + strconv.FormatInt(in.UpdateID, 10), SessionID: s.h.SessionID(),
		SenderRole: roles.RoleUser, TargetRole: "architect", Channel: broker.ChannelTelegram, Direction: "inbound",
		RawBody: in.Text, MetadataJSON: string(meta), Status: "failed", ErrorCode: "chat_not_allowed",
	})
	if errors.Is(err, journal.ErrDuplicate) {
		return nil
	}
	return err
}
