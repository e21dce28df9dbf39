package broker_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hm/broker"
	"hm/broker/proto"
	"hm/broker/telegram"
	"hm/internal/ground/status"
	"hm/journal"
)

// nopStore is a telegram.Store that keeps nothing.
type nopStore struct{}

func (nopStore) KVGet(context.Context, string) (string, bool, error)    { return "", false, nil }
func (nopStore) KVSet(context.Context, string, string) error            { return nil }
func (nopStore) RecordPart(context.Context, telegram.Part) error        { return nil }
func (nopStore) FinishPart(context.Context, string, bool, string) error { return nil }
func (nopStore) RecordRefused(context.Context, telegram.Inbound) error  { return nil }
func nopDeliver(context.Context, telegram.Inbound, string) error        { return nil }

func withRelay(r *telegram.Relay) harnessOpt {
	return func(_ *broker.Config, d *broker.Deps) { d.Telegram = r }
}

// relayOf is a relay of cfg that is never run (no polling).
func relayOf(t *testing.T, cfg telegram.Config) *telegram.Relay {
	t.Helper()
	r, err := telegram.New(cfg, nopStore{}, nopDeliver)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A relay with a token but no chat to send to (no TELEGRAM_CHAT_ID, no
// allowlist) refuses `telegram` sends as telegram_unconfigured and stores
// nothing, exactly like no relay at all; before, the sender got ok:true and
// the row stayed brokered for ever.
func TestTelegramNoChatRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		relay   *telegram.Relay // nil: no relay
		wantMsg string          // part of the refusal's reason
	}{
		{"no relay", nil, "token"},
		{"token, no chat", relayOf(t, telegram.Config{Token: "123:abc", APIURL: "http://127.0.0.1:1"}), "TELEGRAM_CHAT_ID"},
		{"token, blank allowlist", relayOf(t, telegram.Config{Token: "123:abc", APIURL: "http://127.0.0.1:1", Allowlist: []string{" "}}), "TELEGRAM_CHAT_ID"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []harnessOpt
			if tt.relay != nil {
				opts = append(opts, withRelay(tt.relay))
			}
			h := newHarness(t, opts...)
			arch := h.as("architect", false)
			id := "tg-nochat-" + itoa(i)
			ack := send(t, arch, proto.Frame{Type: "send", Target: "telegram", Content: "hello human", MessageID: id})
			if ack.OK || ack.Status != string(status.CodeTelegramUnconfigured) || !strings.Contains(ack.Reason, tt.wantMsg) {
				t.Errorf("ack = %+v, want ok:false %s naming %q", ack, status.CodeTelegramUnconfigured, tt.wantMsg)
			}
			if m, err := h.ledger.Get(context.Background(), id); !errors.Is(err, journal.ErrNotFound) {
				t.Errorf("refused send stored: %+v, %v", m, err)
			}
		})
	}
}

// A `telegram` row left pending by an earlier session is failed with
// telegram_unconfigured and a reason when the restarted hub has no chat to
// send it to, never re-dispatched nowhere and left brokered.
func TestRecoverTelegramWithoutChatFails(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	h := newHarnessAt(t, db, 1)
	if _, err := h.ledger.Append(context.Background(), &journal.Message{MessageID: "tg-left", SessionID: "app-session-1",
		SenderRole: "architect", TargetRole: "telegram", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): left behind"}); err != nil {
		t.Fatal(err)
	}
	h.close()

	h2 := newHarnessAt(t, db, 2, withRelay(relayOf(t, telegram.Config{Token: "123:abc", APIURL: "http://127.0.0.1:1"})))
	delivered, expired, err := h2.b.Recover(context.Background())
	if err != nil || delivered != 0 || expired != 1 {
		t.Errorf("Recover = %d, %d, %v; want 0 delivered, 1 failed", delivered, expired, err)
	}
	m, err := h2.ledger.Get(context.Background(), "tg-left")
	if err != nil || m.Status != status.Failed || m.ErrorCode != status.CodeTelegramUnconfigured {
		t.Fatalf("row = %+v, %v; want failed %s", m, err, status.CodeTelegramUnconfigured)
	}
	evs, err := h2.ledger.Events(context.Background(), "tg-left")
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Event != status.EventFailed || !strings.Contains(string(evs[len(evs)-1].Detail), "TELEGRAM_CHAT_ID") {
		t.Errorf("events = %+v, %v; want a failed event with the reason", evs, err)
	}
}
