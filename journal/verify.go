package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"zombiezen.com/go/sqlite"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Events   int64 `json:"events"`   // event rows checked
	Messages int64 `json:"messages"` // message rows checked
	OK       bool  `json:"ok"`
	// FirstBad names the first problem found, e.g.
	// "comms_events event_id 17: hash mismatch" or
	// "comms_journal row_id 5 (message_id x): body changed".
	FirstBad string `json:"firstBad,omitempty"`
	// Problems counts every problem found.
	Problems int64 `json:"problems"`
}

func (r *VerifyReport) bad(format string, args ...any) {
	r.Problems++
	if r.FirstBad == "" {
		r.FirstBad = fmt.Sprintf(format, args...)
	}
}

// Verify recomputes the event hash chain (including the recorded chain head,
// which catches events removed from the end) and checks every current
// raw_body against the body_hash recorded in its "brokered" event. It reads
// one consistent snapshot. A non-nil error means the check could not run;
// tampering is reported through OK and FirstBad.
func (l *Ledger) Verify(ctx context.Context) (VerifyReport, error) {
	var r VerifyReport
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		r = VerifyReport{}
		if err := verifyChain(conn, &r); err != nil {
			return err
		}
		return verifyBodies(conn, &r)
	})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal verify: %w", err)
	}
	r.OK = r.Problems == 0
	return r, nil
}

func verifyChain(conn *sqlite.Conn, r *VerifyReport) error {
	expectPrev := GenesisHash
	var lastID int64
	buf := make([]byte, 0, 1024)
	err := execArgs(conn, "SELECT event_id, message_id, event, at_ms, detail_json, prev_hash, hash FROM comms_events ORDER BY event_id", func(stmt *sqlite.Stmt) error {
		r.Events++
		id := stmt.ColumnInt64(0)
		prev, hash := stmt.ColumnText(5), stmt.ColumnText(6)
		switch {
		case id == lastID+2:
			r.bad("comms_events event_id %d: event_id %d missing", id, lastID+1)
		case id != lastID+1:
			r.bad("comms_events event_id %d: event_ids %d..%d missing", id, lastID+1, id-1)
		case prev != expectPrev:
			r.bad("comms_events event_id %d: prev_hash does not match event_id %d", id, lastID)
		}
		buf = append(buf[:0], prev...)
		buf = AppendCanonicalEvent(buf, id, stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnInt64(3), stmt.ColumnText(4))
		sum := sha256.Sum256(buf)
		if hex.EncodeToString(sum[:]) != hash {
			r.bad("comms_events event_id %d: hash mismatch", id)
		}
		expectPrev, lastID = hash, id
		return nil
	})
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	head, found := "", false
	if err := execArgs(conn, "SELECT value FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
		head, found = stmt.ColumnText(0), true
		return nil
	}, kvChainHead); err != nil {
		return fmt.Errorf("read chain head: %w", err)
	}
	switch {
	case !found && lastID == 0:
	case !found:
		r.bad("kv chain_head: missing (comms_events has %d events)", r.Events)
	default:
		want := strconv.FormatInt(lastID, 10) + ":" + expectPrev
		if head != want {
			idText, _, _ := strings.Cut(head, ":")
			r.bad("comms_events: chain head records event_id %s but the chain ends at event_id %d (events removed or altered at the end)", idText, lastID)
		}
	}
	return nil
}

func verifyBodies(conn *sqlite.Conn, r *VerifyReport) error {
	var body []byte
	err := execArgs(conn, `SELECT j.row_id, j.message_id, j.raw_body, j.body_hash,
 (SELECT e.detail_json FROM comms_events e WHERE e.message_id = j.message_id AND e.event = 'brokered' ORDER BY e.event_id LIMIT 1)
 FROM comms_journal j ORDER BY j.row_id`, func(stmt *sqlite.Stmt) error {
		r.Messages++
		rowID, msgID := stmt.ColumnInt64(0), stmt.ColumnText(1)
		if stmt.ColumnIsNull(4) {
			r.bad("comms_journal row_id %d (message_id %s): no brokered event", rowID, msgID)
			return nil
		}
		recorded, ok := detailBodyHash(stmt.ColumnText(4))
		if !ok {
			r.bad("comms_journal row_id %d (message_id %s): brokered event has no body_hash", rowID, msgID)
			return nil
		}
		n := stmt.ColumnLen(2)
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:stmt.ColumnBytes(2, body[:n])]
		sum := sha256.Sum256(body)
		switch {
		case hex.EncodeToString(sum[:]) != recorded:
			r.bad("comms_journal row_id %d (message_id %s): body changed", rowID, msgID)
		case stmt.ColumnText(3) != recorded:
			r.bad("comms_journal row_id %d (message_id %s): body_hash column changed", rowID, msgID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	return nil
}

// detailBodyHash extracts body_hash from a brokered event's detail_json.
func detailBodyHash(detail string) (string, bool) {
	const key = `"body_hash":"`
	if i := strings.Index(detail, key); i >= 0 {
		rest := detail[i+len(key):]
		if len(rest) > 64 && rest[64] == '"' {
			return rest[:64], true
		}
	}
	var d struct {
		BodyHash *string `json:"body_hash"`
	}
	if err := json.Unmarshal([]byte(detail), &d); err != nil || d.BodyHash == nil {
		return "", false
	}
	return *d.BodyHash, true
}
