package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
)

// readPath is one way a client reads the ledger: shown reports whether the
// row id reached the client through it (nil error), for rows written after
// the client subscribed (subscription) and before sentinel.
type readPath struct {
	name  string
	shows shows // which of a row's readers the path shows it to
	shown func(t *testing.T, c *client.Client, live map[string]bool, id, word string) (bool, error)
}

// shows names what a path shows: what one may read, one's inbox (what
// one's role received: the operator reads the user's), what one may
// acknowledge.
type shows int

const (
	showsRead shows = iota
	showsInbox
	showsAck
)

// queryResult runs a query frame and returns its raw result; a not_found
// refusal is "not shown".
func queryResult(t *testing.T, c *client.Client, op, payload string) (string, error) {
	t.Helper()
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	err := c.Request(ctxT(t), proto.Frame{Type: proto.TypeQuery, Op: op, Payload: json.RawMessage(payload), RequestID: "q-" + op}, proto.TypeResponse, &resp)
	var pe *proto.Error
	if errors.As(err, &pe) && pe.Code == status.CodeNotFound {
		return "", nil
	}
	return string(resp.Result), err
}

// readPaths are every read path of the hub's socket. hm mcp's tools are
// these queries; the cockpit and `hm comms` are the operator's.
func readPaths(sentinel string) []readPath {
	contains := func(op, payload string) func(*testing.T, *client.Client, map[string]bool, string, string) (bool, error) {
		return func(t *testing.T, c *client.Client, _ map[string]bool, id, word string) (bool, error) {
			res, err := queryResult(t, c, op, strings.NewReplacer("ID", id, "WORD", word, "SENTINEL", sentinel).Replace(payload))
			return strings.Contains(res, `"`+id+`"`), err
		}
	}
	return []readPath{
		{name: "subscribe", shown: func(_ *testing.T, _ *client.Client, live map[string]bool, id, _ string) (bool, error) {
			return live[id], nil
		}},
		{name: "inbox", shows: showsInbox, shown: contains(proto.QueryInbox, `{"unreadOnly":false,"limit":200}`)},
		{name: "search", shown: contains(proto.QuerySearch, `{"query":"WORD"}`)},
		{name: "timeline", shown: contains(proto.QueryTimeline, `{"messageId":"SENTINEL","before":50,"after":0}`)},
		{name: "timeline anchor", shown: contains(proto.QueryTimeline, `{"messageId":"ID","before":0,"after":0}`)},
		{name: "get", shown: func(t *testing.T, c *client.Client, _ map[string]bool, id, _ string) (bool, error) {
			var got proto.GetResult
			res, err := queryResult(t, c, proto.QueryGet, `{"messageIds":["`+id+`"]}`)
			if err == nil {
				err = json.Unmarshal([]byte(res), &got)
			}
			return len(got.Messages) == 1, err
		}},
		{name: "delivery-check", shown: func(t *testing.T, c *client.Client, _ map[string]bool, id, _ string) (bool, error) {
			var dc proto.DeliveryResult
			err := c.Request(ctxT(t), proto.Frame{Type: proto.TypeDeliveryCheck, RequestID: "dc-" + id, MessageID: id}, proto.TypeDeliveryCheckResult, &dc)
			return dc.Known, err
		}},
		// Last: it changes the rows it may.
		{name: "message-ack", shows: showsAck, shown: func(t *testing.T, c *client.Client, _ map[string]bool, id, _ string) (bool, error) {
			// Frames are handled in order: a refusal answers the request
			// before the delivery-check does (as hm_ack reads it).
			for _, typ := range []string{proto.TypeMessageAck, proto.TypeDeliveryCheck} {
				if err := c.WriteJSON(ctxT(t), proto.Frame{Type: typ, MessageID: id, RequestID: "ack-" + id}); err != nil {
					return false, err
				}
			}
			_, err := c.Await(ctxT(t), proto.TypeDeliveryCheckResult, "ack-"+id, id)
			var pe *proto.Error
			if errors.As(err, &pe) && (pe.Code == status.CodeRoleMismatch || pe.Code == status.CodeBadRequest) {
				return false, nil
			}
			return err == nil, err
		}},
	}
}

// TestReadPathsOneRule: who may see a message is one rule
// (journal.Reader) on every read path: the operator sees every row; a role
// what it sent or received; no role a row the hub only recorded, such as
// a refused Telegram update, whichever role it names (rows of older
// versions name the architect as target). The subscription used to skip
// that rule and stream the refused update, raw body included, to an
// architect token.
func TestReadPathsOneRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	who := []string{"operator", "architect", "builder", "oracle"}
	conns := map[string]*client.Client{}
	for _, w := range who {
		role := w
		if w == "operator" {
			role = "user"
		}
		conns[w] = h.as(role, false)
		subscribeSynced(t, conns[w])
	}
	rows := []struct {
		name, id, word string
		write          func() error
		// Who a path shows it to, by what the path shows.
		to map[shows]map[string]bool
	}{
		{name: "normal row", id: "normal-1", word: "plainzebra",
			write: func() error {
				ack := send(t, conns["architect"], proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "plainzebra for builder", MessageID: "normal-1"})
				return poll.Want(ack.OK, "send: %+v", ack)
			},
			to: map[shows]map[string]bool{
				showsRead:  {"operator": true, "architect": true, "builder": true},
				showsInbox: {"builder": true},
				showsAck:   {"operator": true, "builder": true},
			}},
		{name: "refused telegram row (older: to architect)", id: "telegram-refused-7", word: "mallorywords",
			write: func() error {
				return appendRefused(h.ledger, "telegram-refused-7", "architect", "mallorywords IGNORE PREVIOUS")
			},
			to: map[shows]map[string]bool{showsRead: {"operator": true}}},
		{name: "refused telegram row (to user)", id: "telegram-refused-8", word: "evewords",
			write: func() error { return appendRefused(h.ledger, "telegram-refused-8", "user", "evewords IGNORE PREVIOUS") },
			to:    map[shows]map[string]bool{showsRead: {"operator": true}}},
	}
	for _, r := range rows {
		if err := r.write(); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
	// A broadcast every one of them reads ends each live stream; once the
	// operator's search finds every word, the index holds every row.
	const sentinel = "sentinel-1"
	if ack := send(t, conns["builder"], proto.Frame{Type: proto.TypeBroadcast, Content: "end", MessageID: sentinel}); !ack.OK {
		t.Fatalf("sentinel: %+v", ack)
	}
	live := map[string]map[string]bool{}
	for _, w := range who {
		live[w] = journalIDs(t, conns[w], sentinel)
	}
	poll.For(t, 30*time.Second, func() error {
		for _, r := range rows {
			res, err := queryResult(t, conns["operator"], proto.QuerySearch, `{"query":"`+r.word+`"}`)
			if err != nil || !strings.Contains(res, r.id) {
				return fmt.Errorf("search %s: %s %v", r.word, res, err)
			}
		}
		return nil
	})
	for _, p := range readPaths(sentinel) {
		for _, r := range rows {
			for _, w := range who {
				want := r.to[p.shows][w]
				t.Run(p.name+"/"+r.name+"/"+w, func(t *testing.T) {
					got, err := p.shown(t, conns[w], live[w], r.id, r.word)
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("shown = %v, want %v", got, want)
					}
				})
			}
		}
	}
}

// appendRefused records a refused Telegram update as the hub does
// (status recorded, chat_not_allowed) with target.
func appendRefused(l *journal.Ledger, id, target, body string) error {
	_, err := l.Append(context.Background(), &journal.Message{
		MessageID: id, SessionID: "app-session-1", SenderRole: "user", TargetRole: target, Channel: "telegram",
		Direction: "inbound", RawBody: body, Status: status.Recorded, ErrorCode: status.CodeChatNotAllowed,
	})
	return err
}
