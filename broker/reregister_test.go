package broker_test

import (
	"context"
	"testing"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// TestReregisterKeepsOneRole: a connection is registered as one role. A
// second register for that role is answered again (and may turn listening
// on); one that names another role, or turns listening off, is refused
// with an error and changes nothing. It used to answer "registered" as the
// new role while the connection stayed a listener of the old one, so it
// went on receiving (and could acknowledge) the old role's messages, its
// own broadcasts included.
func TestReregisterKeepsOneRole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// first registers the connection; again is the second register.
		first, again proto.Frame
		code         status.Code // "" when again is answered registered
		// listens: whether the connection is a builder listener after.
		listens bool
	}{
		{"operator changes role", reg("builder", operatorToken, true), reg("oracle", operatorToken, false), status.CodeRoleMismatch, true},
		{"operator changes role and listens", reg("builder", operatorToken, true), reg("oracle", operatorToken, true), status.CodeRoleMismatch, true},
		{"non-listener changes role", reg("builder", operatorToken, false), reg("oracle", operatorToken, true), status.CodeRoleMismatch, false},
		{"pane token of another role", reg("builder", "builder", true), reg("oracle", "oracle", false), status.CodeRoleMismatch, true},
		{"listener stops listening", reg("builder", operatorToken, true), reg("builder", operatorToken, false), status.CodeBadRequest, true},
		{"same role again", reg("builder", operatorToken, true), reg("builder", operatorToken, true), "", true},
		{"same role, case and pane token", reg("builder", "builder", true), reg("Builder", "builder", true), "", true},
		{"starts listening", reg("builder", operatorToken, false), reg("builder", operatorToken, true), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tok := func(f proto.Frame) proto.Frame {
				if f.Token != operatorToken {
					f.Token = h.tokens.Issue(f.Token)
				}
				return f
			}
			c := h.dial()
			if _, err := c.Register(ctxT(t), tc.first.Role, tok(tc.first).Token, tc.first.Listen); err != nil {
				t.Fatal(err)
			}
			again := tok(tc.again)
			again.RequestID = "again"
			if err := c.WriteJSON(ctxT(t), again); err != nil {
				t.Fatal(err)
			}
			got := answersTo(t, c)
			switch {
			case tc.code == "" && (len(got) != 1 || got[0].Type != proto.TypeRegistered):
				t.Fatalf("second register: got %s, want registered", frames(got))
			case tc.code != "" && (len(got) != 1 || got[0].Type != proto.TypeError || got[0].Code != string(tc.code) || got[0].RequestID != "again"):
				t.Fatalf("second register: got %s, want one %s error", frames(got), tc.code)
			}
			// The connection is still usable, as the role it had.
			arch := h.as("architect", false)
			ack := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "for builder", MessageID: "to-builder"})
			if !ack.OK {
				t.Fatalf("ack = %+v", ack)
			}
			ack = send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "for oracle", MessageID: "to-oracle"})
			if !ack.OK {
				t.Fatalf("ack = %+v", ack)
			}
			ack = send(t, c, proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "who am I", MessageID: "from-c"})
			if !ack.OK || ack.Header != "BUILDER" {
				t.Fatalf("send after the second register: ack %+v, want sent as BUILDER", ack)
			}
			if ack := send(t, c, proto.Frame{Type: proto.TypeBroadcast, Content: "to all", MessageID: "bc-from-c"}); !ack.OK {
				t.Fatalf("broadcast ack = %+v", ack)
			}
			want := ""
			if tc.listens {
				want = "to-builder"
			}
			msgs := messagesUntil(t, c, want)
			if msgs != want {
				t.Fatalf("connection received messages %q, want %q", msgs, want)
			}
		})
	}
}

func reg(role, token string, listen bool) proto.Frame {
	return proto.Frame{Type: proto.TypeRegister, Role: role, Token: token, Listen: listen}
}

// messagesBefore returns the ids of the message frames c receives before
// the answer to a probe, joined with commas.
// messagesUntil returns the ids of the messages c receives, in order, until
// want (when not "") has come and then a probe is answered: a listener
// registered just before may get its live messages after its backlog
// replay, later than the sender's ACK.
func messagesUntil(t *testing.T, c *client.Client, want string) string {
	t.Helper()
	ids := ""
	add := func(id string) {
		if ids != "" {
			ids += ","
		}
		ids += id
	}
	if want != "" {
		ctx, cancel := context.WithTimeout(context.Background(), poll.Floor)
		defer cancel()
		for {
			typ, raw, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v (got %q)", want, err, ids)
			}
			if typ != proto.TypeMessage {
				continue
			}
			id := decode[proto.Message](t, raw).MessageID
			add(id)
			if id == want {
				break
			}
		}
	}
	rest := messagesBefore(t, c)
	if rest != "" {
		add(rest)
	}
	return ids
}

func messagesBefore(t *testing.T, c *client.Client) string {
	t.Helper()
	ids := ""
	for _, f := range answersTo(t, c) {
		if f.Type != proto.TypeMessage {
			continue
		}
		m := decode[proto.Message](t, f.raw)
		if ids != "" {
			ids += ","
		}
		ids += m.MessageID
	}
	return ids
}
