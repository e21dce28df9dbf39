package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"zombiezen.com/go/sqlite"

	"hm/agent"
	"hm/internal/cockpit"
	"hm/journal"
)

// cockpitHandler is the web cockpit (/ui/, issue #17) over this hub.
func (h *Hub) cockpitHandler(ctx context.Context) http.Handler {
	return cockpit.New(cockpit.Deps{
		Port:       h.Port,
		IsOperator: h.Tokens.IsOperator,
		ServeWS:    h.Broker.ServeOperatorWS,
		Attach: func(authorize func(*http.Request) bool) http.Handler {
			return agent.AttachHandlerContext(ctx, h.lookupPane, authorize, h.log.With("component", "attach", "via", "cockpit"))
		},
		Snapshot:     func(ctx context.Context) any { return h.Snapshot(ctx) },
		Handoff:      h.cockpitHandoff,
		Verify:       h.cockpitVerify,
		MessageChain: h.messageChain,
		Logger:       h.log.With("component", "cockpit"),
	})
}

// cockpitHandoff reads handoffs/session.md, else the briefing.
func (h *Hub) cockpitHandoff(context.Context) (cockpit.Handoff, error) {
	for _, p := range []string{h.Layout.Session(), h.Layout.Briefing()} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return cockpit.Handoff{}, fmt.Errorf("read %s: %w", p, err)
		}
		return cockpit.Handoff{Path: p, Markdown: string(data)}, nil
	}
	return cockpit.Handoff{Path: h.Layout.Session()}, nil
}

// cockpitVerify runs the ledger's verification (`hm journal verify`).
func (h *Hub) cockpitVerify(ctx context.Context) (cockpit.Verification, error) {
	rep, err := h.Ledger.Verify(ctx)
	if err != nil {
		return cockpit.Verification{}, err
	}
	return cockpit.Verification{OK: rep.OK, Rows: rep.Events, Messages: rep.Messages, Problem: rep.FirstBad}, nil
}

// messageChain reads a message's events with their hashes, and checks that
// each one's prev_hash is the hash of the event before it in the ledger
// (or the genesis hash for the first). The events' HMACs are checked by
// Verify.
func (h *Hub) messageChain(ctx context.Context, messageID string) (cockpit.MessageChain, bool, error) {
	out := cockpit.MessageChain{Events: []cockpit.ChainEvent{}, ChainOK: true}
	found := false
	err := h.Ledger.Read(ctx, func(conn *sqlite.Conn) error {
		stmt := conn.Prep(`SELECT e.event, e.at_ms, e.detail_json, e.hash, e.prev_hash, e.event_id,
 (SELECT p.hash FROM comms_events p WHERE p.event_id = e.event_id - 1)
 FROM comms_events e WHERE e.message_id = ? ORDER BY e.event_id`)
		defer stmt.Reset()
		stmt.BindText(1, messageID)
		for {
			row, err := stmt.Step()
			if err != nil {
				return err
			}
			if !row {
				return nil
			}
			found = true
			out.Events = append(out.Events, cockpit.ChainEvent{
				Event: stmt.ColumnText(0), At: stmt.ColumnInt64(1), Detail: detailJSON(stmt.ColumnText(2)), Hash: stmt.ColumnText(3),
			})
			prev, id := stmt.ColumnText(4), stmt.ColumnInt64(5)
			want := journal.GenesisHash
			if id > 1 {
				if stmt.ColumnType(6) == sqlite.TypeNull {
					out.ChainOK = false // the event before it is missing
					continue
				}
				want = stmt.ColumnText(6)
			}
			if prev != want {
				out.ChainOK = false
			}
		}
	})
	if err != nil {
		return cockpit.MessageChain{}, false, fmt.Errorf("read events of %s: %w", messageID, err)
	}
	return out, found, nil
}

// detailJSON is an event's detail_json as JSON: null when empty, a string
// when it is not valid JSON (a tampered row still shows what it holds).
func detailJSON(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
