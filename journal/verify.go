package journal

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"hm/internal/status"

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
	FirstBad string `json:"first_bad,omitempty"`
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
// raw_body against the body_hash recorded in its "brokered" event. It also
// checks that every brokered message still has its row, and that each row's
// status and ack_status match the latest event recording them, and that the
// running per-session counts (comms_session_counts) match a recount of the
// rows. It reads one consistent snapshot. A non-nil error means the check could not run;
// tampering is reported through OK and FirstBad.
func (l *Ledger) Verify(ctx context.Context) (VerifyReport, error) {
	var r VerifyReport
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		r = VerifyReport{}
		states := make(map[string]*verifyState)
		if err := verifyChain(conn, &r, states); err != nil {
			return err
		}
		return verifyMessages(conn, &r, states)
	})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal verify: %w", err)
	}
	r.OK = r.Problems == 0
	return r, nil
}

// verifyState is what the event chain says about one message.
type verifyState struct {
	brokeredID int64    // event_id of its first brokered event (0: none)
	bodyHash   [32]byte // body_hash recorded there
	hashOK     bool     // body_hash present and well-formed
	status     string   // from the latest event recording a status
	ack        string
	hasState   bool
	seen       bool // its comms_journal row exists
}

func verifyChain(conn *sqlite.Conn, r *VerifyReport, states map[string]*verifyState) error {
	expectPrev := GenesisHash
	var lastID int64
	buf := make([]byte, 0, 1024)
	err := execArgs(conn, "SELECT event_id, message_id, event, at_ms, detail_json, prev_hash, hash FROM comms_events ORDER BY event_id", func(stmt *sqlite.Stmt) error {
		r.Events++
		id := stmt.ColumnInt64(0)
		msgID, event, detail := stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(4)
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
		buf = AppendCanonicalEvent(buf, id, msgID, event, stmt.ColumnInt64(3), detail)
		sum := sha256.Sum256(buf)
		if hex.EncodeToString(sum[:]) != hash {
			r.bad("comms_events event_id %d: hash mismatch", id)
		}
		expectPrev, lastID = hash, id

		st := states[msgID]
		if st == nil {
			st = &verifyState{}
			states[msgID] = st
		}
		d := parseDetail(detail)
		if status.Event(event) == status.EventBrokered && st.brokeredID == 0 {
			st.brokeredID = id
			if d.hasBodyHash && len(d.bodyHash) == 64 {
				_, err := hex.Decode(st.bodyHash[:], []byte(d.bodyHash))
				st.hashOK = err == nil
			}
		}
		if d.hasStatus {
			st.status, st.ack, st.hasState = d.status, d.ack, true
		}
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

func verifyMessages(conn *sqlite.Conn, r *VerifyReport, states map[string]*verifyState) error {
	var body []byte
	var column [32]byte
	counts := groupCounter{index: map[string]int{}}
	err := execArgs(conn, "SELECT row_id, message_id, raw_body, body_hash, status, ack_status, session_id, channel, sender_role, seq FROM comms_journal ORDER BY row_id", func(stmt *sqlite.Stmt) error {
		r.Messages++
		rowID, msgID := stmt.ColumnInt64(0), stmt.ColumnText(1)
		counts.add(stmt, [4]int{6, 4, 7, 8}, stmt.ColumnInt64(9))
		st := states[msgID]
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
		if status, ack := stmt.ColumnText(4), stmt.ColumnText(5); st.hasState && (status != st.status || ack != st.ack) {
			r.bad("comms_journal row_id %d (message_id %s): state changed (row says %s/%s, events say %s/%s)",
				rowID, msgID, status, ack, st.status, st.ack)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	// Rows deleted outright leave their brokered event behind.
	var deleted []int64
	ids := make(map[int64]string)
	for id, st := range states {
		if st.brokeredID != 0 && !st.seen {
			deleted = append(deleted, st.brokeredID)
			ids[st.brokeredID] = id
		}
	}
	slices.Sort(deleted)
	for _, ev := range deleted {
		r.bad("comms_events event_id %d (message_id %s): message row deleted", ev, ids[ev])
	}
	return verifyCounts(conn, r, counts.result())
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

// detailInfo is what Verify reads from an event's detail_json.
type detailInfo struct {
	bodyHash    string
	hasBodyHash bool
	status      string
	hasStatus   bool
	ack         string
}

// parseDetail extracts the top-level body_hash, status and ack_status
// string values of detail_json. Flat objects without escapes (everything
// the ledger writes) take a fast path; anything else is decoded fully.
func parseDetail(detail string) detailInfo {
	if d, ok := parseDetailFast(detail); ok {
		return d
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(detail), &m); err != nil {
		return detailInfo{}
	}
	str := func(key string) (string, bool) {
		raw, ok := m[key]
		if !ok || len(raw) == 0 || raw[0] != '"' {
			return "", false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	var d detailInfo
	d.bodyHash, d.hasBodyHash = str("body_hash")
	d.status, d.hasStatus = str("status")
	d.ack, _ = str("ack_status")
	return d
}

func parseDetailFast(detail string) (detailInfo, bool) {
	if len(detail) < 2 || detail[0] != '{' || detail[len(detail)-1] != '}' ||
		strings.ContainsAny(detail[1:], "{[\\") || !utf8.ValidString(detail) || !json.Valid([]byte(detail)) {
		return detailInfo{}, false
	}
	var d detailInfo
	var ok bool
	if d.bodyHash, d.hasBodyHash, ok = flatString(detail, `"body_hash":`); !ok {
		return detailInfo{}, false
	}
	if d.status, d.hasStatus, ok = flatString(detail, `"status":`); !ok {
		return detailInfo{}, false
	}
	if d.ack, _, ok = flatString(detail, `"ack_status":`); !ok {
		return detailInfo{}, false
	}
	return d, true
}

// flatString finds key in a flat, escape-free, valid JSON object. ok is
// false when the fast path cannot decide (key repeated, spaced, or its value
// is not a string).
func flatString(detail, key string) (val string, found, ok bool) {
	i := strings.Index(detail, key)
	if i < 0 {
		// A spaced-out `"key" :` would be missed: only trust absence when
		// the bare quoted name is absent too.
		return "", false, !strings.Contains(detail, key[:len(key)-1])
	}
	if strings.Contains(detail[i+len(key):], key) {
		return "", false, false
	}
	rest := detail[i+len(key):]
	if len(rest) == 0 || rest[0] != '"' {
		return "", false, false
	}
	end := strings.IndexByte(rest[1:], '"')
	if end < 0 {
		return "", false, false
	}
	return rest[1 : 1+end], true, true
}
