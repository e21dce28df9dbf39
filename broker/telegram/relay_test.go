package telegram

// Tests of the relay's delivery: what reaches the architect or is refused,
// exactly once across restarts, stops and failed deliveries, and the stored
// offset.

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
)

// TestInbound enqueues one update of each interesting kind and checks what
// reaches the architect, what is refused, and that the offset ends past all.
func TestInbound(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()

	type want struct {
		text    string // delivered text; "" = not delivered
		refused bool
	}
	old := time.Now().Add(-25*time.Minute - 10*time.Second)
	huge := strings.Repeat("long line of text\n", 6000) + "end"
	cases := []struct {
		name string
		add  func() int64
		want want
	}{
		{"owner text", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Text: "hello architect"})
		}, want{text: "[Telegram from Ann]: hello architect"}},
		{"allowlisted chat", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 43, FromName: "Bob", Text: "from 43"})
		}, want{text: "[Telegram from Bob]: from 43"}},
		{"allowlisted by @name", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: -1009, ChatType: "supergroup", ChatUser: "TeamChan", ChatTitle: "Team", FromName: "Cy", Text: "group hi"})
		}, want{text: "[Telegram from Cy]: group hi"}},
		{"foreign chat refused", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 666, FromName: "Mallory", Text: "rm -rf /"})
		}, want{refused: true}},
		{"photo with caption", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Photo: true, Caption: "the error"})
		}, want{text: "[Telegram from Ann]: [Photo] the error"}},
		{"document", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Document: "trace.log", Caption: "see"})
		}, want{text: "[Telegram from Ann]: [File: trace.log] see"}},
		{"voice", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Voice: true})
		}, want{text: "[Telegram from Ann]: [Voice]"}},
		{"sticker", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Sticker: true, Emoji: "👍"})
		}, want{text: "[Telegram from Ann]: [Sticker 👍]"}},
		{"edited", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Text: "typo fixed", Edited: true})
		}, want{text: "[Telegram from Ann]: [edited] typo fixed"}},
		{"bot command", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Text: "/start"})
		}, want{text: "[Telegram from Ann]: /start"}},
		{"unknown kind skipped", func() int64 {
			return fake.EnqueueRaw("some_future_kind", map[string]any{"x": 1})
		}, want{}},
		{"callback query skipped", func() int64 {
			return fake.EnqueueRaw("callback_query", map[string]any{"id": "q", "data": "yes"})
		}, want{}},
		{"service message skipped", func() int64 {
			return fake.EnqueueJSON(`"message":{"message_id":9,"date":1,"chat":{"id":42,"type":"private"},"new_chat_title":"x"}`)
		}, want{}},
		{"invalid UTF-8 and escapes cleaned", func() int64 {
			return fake.EnqueueJSON("\"message\":{\"message_id\":10,\"date\":" + strconv.FormatInt(time.Now().Unix(), 10) +
				",\"chat\":{\"id\":42,\"type\":\"private\"},\"from\":{\"id\":42,\"first_name\":\"Ann\"},\"text\":\"a\xffb\\u001b[2Jc\"}")
		}, want{text: "[Telegram from Ann]: a\uFFFDb[2Jc"}},
		{"old message marked delayed", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Text: "sent a while ago", Date: old})
		}, want{text: "[delayed: 25m old] [Telegram from Ann]: sent a while ago"}},
		{"huge text", func() int64 {
			return fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Ann", Text: huge})
		}, want{text: "[Telegram from Ann]: " + huge}},
	}
	ids := make([]int64, len(cases))
	for i, c := range cases {
		ids[i] = c.add()
	}
	last := ids[len(ids)-1]

	cfg := testConfig(t, fake)
	ru := startRelay(t, cfg, store)
	key := ru.relay.offsetKey
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(store.get(key) == strconv.FormatInt(last+1, 10), "offset past the last update")
	})

	delivered, refused, _ := store.snapshot()
	byID := map[int64]delivery{}
	for _, d := range delivered {
		if _, dup := byID[d.In.UpdateID]; dup {
			t.Errorf("update %d delivered twice", d.In.UpdateID)
		}
		byID[d.In.UpdateID] = d
	}
	refusedIDs := map[int64]Inbound{}
	for _, in := range refused {
		refusedIDs[in.UpdateID] = in
	}
	for i, c := range cases {
		d, got := byID[ids[i]]
		switch {
		case c.want.text != "":
			if !got {
				t.Errorf("%s: not delivered", c.name)
			} else if d.Text != c.want.text {
				t.Errorf("%s: delivered %q, want %q", c.name, trim(d.Text), trim(c.want.text))
			}
		case got:
			t.Errorf("%s: delivered %q, want nothing", c.name, trim(d.Text))
		}
		if _, r := refusedIDs[ids[i]]; r != c.want.refused {
			t.Errorf("%s: refused = %v, want %v", c.name, r, c.want.refused)
		}
	}
	if in := refusedIDs[ids[3]]; in.ChatID != "666" || in.Sender != "Mallory" || in.Text != "rm -rf /" {
		t.Errorf("refused inbound = %+v", in)
	}
	// Delivery order follows update order.
	prev := int64(0)
	for _, d := range delivered {
		if d.In.UpdateID <= prev {
			t.Errorf("delivery order: %d after %d", d.In.UpdateID, prev)
		}
		prev = d.In.UpdateID
	}
	st := ru.relay.Status()
	if st.State != StatePolling || st.Bot != "@"+telegramtest.Bot.Username || st.Offset != last+1 {
		t.Errorf("status = %+v", st)
	}
	if st.Inbound != int64(len(delivered)) || st.Refused != 1 || st.Skipped != 3 {
		t.Errorf("counters = inbound %d refused %d skipped %d, want %d 1 3", st.Inbound, st.Refused, st.Skipped, len(delivered))
	}
	chat, at := ru.relay.LastInbound()
	if chat != "42" || time.Since(at) > time.Minute {
		t.Errorf("LastInbound = %q %v", chat, at)
	}
	// getUpdates asked for the message kinds only, with the long-poll timeout.
	ps := fake.Params("getUpdates")
	if len(ps) == 0 || ps[0]["timeout"] != "1" || !strings.Contains(ps[0]["allowed_updates"], "edited_message") {
		t.Errorf("getUpdates params = %v", ps)
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// TestRestart stops the relay between updates and starts a new one on the
// same store, with a server that never forgets confirmed updates: every
// update arrives exactly once, and the offset only moves after the commit.
func TestRestart(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.RetainConfirmed(true)
	store := newMemStore()
	cfg := testConfig(t, fake)

	const key = "telegram.offset.424242"
	var offsetErr error
	store.onDeliver = func(ctx context.Context, in Inbound) error {
		// The offset must not have moved past this update before its commit.
		if v := store.get(key); v != "" {
			if n, _ := strconv.ParseInt(v, 10, 64); n > in.UpdateID {
				offsetErr = errors.New("offset " + v + " saved before update " + strconv.FormatInt(in.UpdateID, 10) + " was committed")
			}
		}
		return nil
	}

	var ids []int64
	for i := range 3 {
		ids = append(ids, fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "first run " + strconv.Itoa(i)}))
	}
	ru := startRelay(t, cfg, store)
	poll.For(t, 10*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) == 3, "3 deliveries, have %v", len(d))
	})
	poll.For(t, 10*time.Second, func() error { return poll.Want(store.get(key) == strconv.FormatInt(ids[2]+1, 10), "offset saved") })
	ru.stop(t)

	// Updates arriving while the relay is down.
	for i := range 2 {
		ids = append(ids, fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "while down " + strconv.Itoa(i)}))
	}
	ru2 := startRelay(t, cfg, store)
	poll.For(t, 10*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) >= 5, "5 deliveries, have %v", len(d))
	})
	// Give a wrongly repeating relay the chance to show it.
	poll.For(t, 10*time.Second, func() error { return poll.Want(fake.Offset() == ids[4]+1, "another poll, have %v", fake.Offset()) })
	polls := fake.Calls("getUpdates")
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(fake.Calls("getUpdates") > polls+1, "one more poll, have %v", fake.Calls("getUpdates"))
	})
	ru2.stop(t)

	delivered, _, calls := store.snapshot()
	if got := deliveredIDs(delivered); !reflect.DeepEqual(got, ids) {
		t.Fatalf("delivered %v, want %v exactly once each", got, ids)
	}
	if !reflect.DeepEqual(calls, ids) {
		t.Fatalf("Deliver called for %v, want %v", calls, ids)
	}
	if offsetErr != nil {
		t.Fatal(offsetErr)
	}
}

// TestStopDuringDelivery stops the relay while a delivery is in flight (and
// fails because of it): the update is not lost, the next relay delivers it.
func TestStopDuringDelivery(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.RetainConfirmed(true)
	store := newMemStore()
	cfg := testConfig(t, fake)

	id1 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "one"})
	id2 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "two"})
	entered := make(chan struct{})
	store.onDeliver = func(ctx context.Context, in Inbound) error {
		if in.UpdateID != id2 {
			return nil
		}
		close(entered)
		<-ctx.Done() // the commit cannot finish before shutdown
		return ctx.Err()
	}
	ru := startRelay(t, cfg, store)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("second update never reached Deliver")
	}
	if took := ru.stop(t); took > 5*time.Second {
		t.Errorf("Run took %v to stop", took)
	}
	if v := store.get(ru.relay.offsetKey); v != strconv.FormatInt(id2, 10) {
		t.Fatalf("offset after stop = %q, want %d (update %d not committed)", v, id2, id2)
	}

	store.mu.Lock()
	store.onDeliver = nil
	store.mu.Unlock()
	startRelay(t, cfg, store)
	poll.For(t, 10*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) == 2, "second update delivered, have %v", len(d))
	})
	delivered, _, _ := store.snapshot()
	if got := deliveredIDs(delivered); !reflect.DeepEqual(got, []int64{id1, id2}) {
		t.Fatalf("delivered %v, want [%d %d]", got, id1, id2)
	}
}

// TestDeliverFailureRetried: journal_unavailable on Deliver keeps the offset
// and retries the same update until it commits, then continues.
func TestDeliverFailureRetried(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	store.failDeliver = 3
	id1 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "needs retries"})
	id2 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "after"})
	ru := startRelay(t, testConfig(t, fake), store)
	poll.For(t, 10*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) == 2, "both delivered, have %v", len(d))
	})
	delivered, _, calls := store.snapshot()
	if got := deliveredIDs(delivered); !reflect.DeepEqual(got, []int64{id1, id2}) {
		t.Fatalf("delivered %v", got)
	}
	if want := []int64{id1, id1, id1, id1, id2}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("Deliver calls %v, want %v", calls, want)
	}
	poll.For(t, 5*time.Second, func() error {
		return poll.Want(store.get(ru.relay.offsetKey) == strconv.FormatInt(id2+1, 10), "offset saved")
	})
}

// TestOffsetKeyPerBot: the offset is stored per bot id, and a corrupt stored
// value does not stop the relay.
func TestOffsetKeyPerBot(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	store.kv["telegram.offset.424242"] = "garbage"
	id := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "x"})
	ru := startRelay(t, testConfig(t, fake), store)
	if ru.relay.offsetKey != "telegram.offset.424242" {
		t.Fatalf("offset key = %q", ru.relay.offsetKey)
	}
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(store.get("telegram.offset.424242") == strconv.FormatInt(id+1, 10), "offset saved")
	})
}

// TestOffsetSaveFailure: a failed offset save (the update is committed) does
// not stop the relay, loses nothing and repeats nothing.
func TestOffsetSaveFailure(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	store.failKVSet = 1
	id1 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "one"})
	id2 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "two"})
	ru := startRelay(t, testConfig(t, fake), store)
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(store.get(ru.relay.offsetKey) == strconv.FormatInt(id2+1, 10), "offset saved")
	})
	id3 := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "three"})
	poll.For(t, 10*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) == 3, "third delivered, have %v", len(d))
	})
	delivered, _, calls := store.snapshot()
	if want := []int64{id1, id2, id3}; !reflect.DeepEqual(deliveredIDs(delivered), want) || !reflect.DeepEqual(calls, want) {
		t.Fatalf("delivered %v (calls %v), want %v", deliveredIDs(delivered), calls, want)
	}
}
