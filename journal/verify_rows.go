package journal

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
)

// messages checks every comms_journal row against what the chain says about
// it: the body against the brokered body_hash, the changeable columns
// against the latest event, and that no chained message lost its row.
func (v *verifier) messages() error {
	r := v.r
	var body []byte
	var column [32]byte
	v.counts = groupCounter{index: map[string]int{}}
	err := execArgs(v.conn, `SELECT row_id, message_id, raw_body, body_hash, status, ack_status, session_id, channel, sender_role, seq,
 error_code, attempt, updated_at_ms FROM comms_journal ORDER BY row_id`, func(stmt *sqlite.Stmt) error {
		r.Messages++
		rowID, msgID := stmt.ColumnInt64(0), stmt.ColumnText(1)
		st := v.states[msgID]
		if st == nil && stmt.ColumnText(4) == string(status.Recorded) {
			// Another program's pre-send record (SquidRun's hm-send.js):
			// no event, never counted, hidden from roles, and replaced by
			// the hub's row if the message reaches it. Not hm's evidence.
			r.Foreign++
			return nil
		}
		v.counts.add(stmt, [4]int{6, 4, 7, 8}, stmt.ColumnInt64(9))
		if st == nil || st.brokeredID == 0 {
			r.bad("comms_journal row_id %d (message_id %s): no brokered event", rowID, msgID)
			return nil
		}
		st.seen = true
		if !st.hashOK {
			r.bad("comms_journal row_id %d (message_id %s): brokered event has no body_hash", rowID, msgID)
			return nil
		}
		n := stmt.ColumnLen(2)
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:stmt.ColumnBytes(2, body[:n])]
		colHash := stmt.ColumnText(3)
		_, colErr := hex.Decode(column[:], []byte(colHash))
		switch {
		case sha256.Sum256(body) != st.bodyHash:
			r.bad("comms_journal row_id %d (message_id %s): body changed", rowID, msgID)
		case len(colHash) != 64 || colErr != nil || column != st.bodyHash:
			r.bad("comms_journal row_id %d (message_id %s): body_hash column changed", rowID, msgID)
		}
		rowStatus, ack := stmt.ColumnText(4), stmt.ColumnText(5)
		code, attempt, updated := stmt.ColumnText(10), stmt.ColumnInt64(11), stmt.ColumnInt64(12)
		switch {
		case st.hasState && (rowStatus != st.status || ack != st.ack):
			r.bad("comms_journal row_id %d (message_id %s): state changed (row says %s/%s, events say %s/%s)",
				rowID, msgID, rowStatus, ack, st.status, st.ack)
		case st.hasRow && (code != st.errorCode || attempt != st.attempt || updated != st.updatedAtMs):
			r.bad("comms_journal row_id %d (message_id %s): state changed (row says error_code %q attempt %d updated_at_ms %d, events say %q %d %d)",
				rowID, msgID, code, attempt, updated, st.errorCode, st.attempt, st.updatedAtMs)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	// Rows deleted outright leave their brokered event behind.
	var deleted []int64
	ids := make(map[int64]string)
	for id, st := range v.states {
		if st.brokeredID != 0 && !st.seen {
			deleted = append(deleted, st.brokeredID)
			ids[st.brokeredID] = id
		}
	}
	slices.Sort(deleted)
	for _, ev := range deleted {
		r.bad("comms_events event_id %d (message_id %s): message row deleted", ev, ids[ev])
	}
	return nil
}

// groupCounter counts rows per (session, status, channel, sender) without
// allocating for a group it has seen: the key is looked up as the columns'
// length-prefixed bytes.
type groupCounter struct {
	buf   []byte
	index map[string]int // encoded key → position in keys and vals
	keys  []countKey
	vals  []countVal
}

// add counts the current row of stmt, whose columns cols are its session,
// status, channel and sender, with seq.
func (g *groupCounter) add(stmt *sqlite.Stmt, cols [4]int, seq int64) {
	g.buf = g.buf[:0]
	for _, c := range cols {
		n := stmt.ColumnLen(c)
		g.buf = binary.AppendUvarint(g.buf, uint64(n))
		start := len(g.buf)
		g.buf = slices.Grow(g.buf, n)[:start+n]
		stmt.ColumnBytes(c, g.buf[start:])
	}
	i, ok := g.index[string(g.buf)]
	if !ok {
		i = len(g.keys)
		g.index[string(g.buf)] = i
		g.keys = append(g.keys, countKey{session: stmt.ColumnText(cols[0]), status: stmt.ColumnText(cols[1]),
			channel: stmt.ColumnText(cols[2]), sender: stmt.ColumnText(cols[3])})
		g.vals = append(g.vals, countVal{})
	}
	v := &g.vals[i]
	v.n++
	v.maxSeq = max(v.maxSeq, seq)
}

func (g *groupCounter) result() map[countKey]*countVal {
	out := make(map[countKey]*countVal, len(g.keys))
	for i, k := range g.keys {
		out[k] = &g.vals[i]
	}
	return out
}

// countKey names one group of comms_session_counts.
type countKey struct{ session, status, channel, sender string }

// countVal is a group's message count and highest seq (never below 0).
type countVal struct{ n, maxSeq int64 }

// verifyCounts compares comms_session_counts with the recount of the rows:
// every group's n, and per session and sender the highest seq of the
// groups that hold messages (a group's max_seq may stay above its own rows
// after they moved to another status, never above the sender's).
func verifyCounts(conn *sqlite.Conn, r *VerifyReport, rows map[countKey]*countVal) error {
	stored := make(map[countKey]countVal)
	err := execArgs(conn, "SELECT session_id, status, channel, sender_role, n, max_seq FROM comms_session_counts", func(stmt *sqlite.Stmt) error {
		k := countKey{session: stmt.ColumnText(0), status: stmt.ColumnText(1), channel: stmt.ColumnText(2), sender: stmt.ColumnText(3)}
		stored[k] = countVal{n: stmt.ColumnInt64(4), maxSeq: stmt.ColumnInt64(5)}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read session counts: %w", err)
	}
	keys := make([]countKey, 0, len(rows)+len(stored))
	for k := range rows {
		keys = append(keys, k)
	}
	for k := range stored {
		if _, ok := rows[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareCountKeys)
	type senderKey struct{ session, sender string }
	rowSeq := map[senderKey]int64{}
	storedSeq := map[senderKey]int64{}
	var senders []senderKey
	for _, k := range keys {
		var want int64
		sk := senderKey{k.session, k.sender}
		if c := rows[k]; c != nil {
			want = c.n
			if _, ok := rowSeq[sk]; !ok {
				senders = append(senders, sk)
			}
			rowSeq[sk] = max(rowSeq[sk], c.maxSeq)
		}
		got := stored[k]
		if got.n > 0 {
			storedSeq[sk] = max(storedSeq[sk], got.maxSeq)
		}
		if got.n != want {
			r.bad("comms_session_counts session %q status %q channel %q sender %q: counts %d messages, the rows hold %d",
				k.session, k.status, k.channel, k.sender, got.n, want)
		}
	}
	for _, sk := range senders {
		if got, want := storedSeq[sk], rowSeq[sk]; got != want {
			r.bad("comms_session_counts session %q sender %q: highest seq %d, the rows say %d", sk.session, sk.sender, got, want)
		}
	}
	return nil
}

func compareCountKeys(a, b countKey) int {
	return cmp.Or(strings.Compare(a.session, b.session), strings.Compare(a.status, b.status),
		strings.Compare(a.channel, b.channel), strings.Compare(a.sender, b.sender))
}
