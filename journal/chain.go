package journal

import (
	"crypto/hmac"
	"encoding/hex"
	"hash"
	"strconv"
)

// change is what a keyed event's hash covers beyond the event row itself:
// the message row as it stands after the change and the side rows the
// change wrote for that message (see the package documentation).
type change struct {
	row        *Message    // nil for ledger_key events
	static     *rowStatic  // row's unchanging columns, encoded (optional: the writer's)
	signals    []Signal    // inserted with the message (its first event)
	resolved   []int64     // signal ids the message resolved (its first event)
	obligation *Obligation // opened with the message (its first event)
	closed     *Obligation // ClosedBy/ClosedAtMs (obligation_closed events)
}

// AppendCanonicalChange appends the canonical JSON of a keyed event to b:
//
//	{"at_ms":A,"change":C,"detail_json":D,"event":E,"event_id":I,"message_id":M}
//
// with C = {"obligation":O,"obligation_closed":X,"row":R,"signals":[S...],"signals_resolved":[N...]}
// (null or [] where the event has none); the encoding rules are those of
// AppendCanonicalEvent.
func appendCanonicalChange(b []byte, eventID int64, messageID, event string, atMs int64, detailJSON string, c *change) []byte {
	b = append(b, `{"at_ms":`...)
	b = strconv.AppendInt(b, atMs, 10)
	b = append(b, `,"change":{"obligation":`...)
	if o := c.obligation; o != nil {
		b = append(b, `{"obligation_id":`...)
		b = strconv.AppendInt(b, o.ObligationID, 10)
		b = append(b, `,"opened_at_ms":`...)
		b = strconv.AppendInt(b, o.OpenedAtMs, 10)
		b = append(b, `,"owner_role":`...)
		b = appendJSONString(b, o.OwnerRole)
		b = append(b, `,"ref":`...)
		b = appendJSONString(b, o.Ref)
		b = append(b, `,"requester_role":`...)
		b = appendJSONString(b, o.RequesterRole)
		b = append(b, `,"session_id":`...)
		b = appendJSONString(b, o.SessionID)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"obligation_closed":`...)
	if o := c.closed; o != nil {
		b = append(b, `{"closed_at_ms":`...)
		b = strconv.AppendInt(b, o.ClosedAtMs, 10)
		b = append(b, `,"closed_by":`...)
		b = appendJSONString(b, o.ClosedBy)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"row":`...)
	if m := c.row; m != nil {
		b = appendCanonicalRow(b, m, c.static)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"signals":[`...)
	for i := range c.signals {
		s := &c.signals[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"at_ms":`...)
		b = strconv.AppendInt(b, s.AtMs, 10)
		b = append(b, `,"kind":`...)
		b = appendJSONString(b, s.Kind)
		b = append(b, `,"ref":`...)
		b = appendJSONString(b, s.Ref)
		b = append(b, `,"sender_role":`...)
		b = appendJSONString(b, s.SenderRole)
		b = append(b, `,"session_id":`...)
		b = appendJSONString(b, s.SessionID)
		b = append(b, `,"signal_id":`...)
		b = strconv.AppendInt(b, s.SignalID, 10)
		b = append(b, `,"text":`...)
		b = appendJSONString(b, s.Text)
		b = append(b, '}')
	}
	b = append(b, `],"signals_resolved":[`...)
	for i, id := range c.resolved {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, `]},`...)
	return appendEventKeys(b, eventID, messageID, event, detailJSON)
}

// appendCanonicalRow appends every comms_journal column of m but raw_body
// (covered through body_hash, which Verify checks against raw_body) in key
// order; NULL seq and sent_at_ms are 0. The columns that never change once
// the row is inserted come from static when it was made from this row
// (the writer's), and are encoded here otherwise.
func appendCanonicalRow(b []byte, m *Message, static *rowStatic) []byte {
	if !static.of(m) {
		static = nil
	}
	b = appendRowHead(b, m)
	b = static.appendRun(b, m, 0)
	b = append(b, `,"error_code":`...)
	b = appendJSONString(b, string(m.ErrorCode))
	b = static.appendRun(b, m, 1)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(m.Status))
	b = static.appendRun(b, m, 2)
	b = append(b, `,"updated_at_ms":`...)
	b = strconv.AppendInt(b, m.UpdatedAtMs, 10)
	return append(b, '}')
}

// rowStatic is the canonical encoding of the row columns between the
// state columns (the runs appendCanonicalRow writes around error_code and
// status), made once per row: they do not change after the INSERT, so an
// event on a row the writer holds encodes only its state (rows.go).
type rowStatic struct {
	messageID  string
	rowID      int64
	runs       string
	end0, end1 int // where runs 0 and 1 end in runs
}

func newRowStatic(m *Message) *rowStatic {
	b := make([]byte, 0, 320)
	b = appendStaticRun(b, m, 0)
	end0 := len(b)
	b = appendStaticRun(b, m, 1)
	end1 := len(b)
	b = appendStaticRun(b, m, 2)
	return &rowStatic{messageID: m.MessageID, rowID: m.RowID, runs: string(b), end0: end0, end1: end1}
}

// of reports whether s was made from m's row.
func (s *rowStatic) of(m *Message) bool {
	return s != nil && s.rowID == m.RowID && s.messageID == m.MessageID
}

// appendRun appends run i of m's row: s's copy, or encoded now when s is nil.
func (s *rowStatic) appendRun(b []byte, m *Message, i int) []byte {
	if s == nil {
		return appendStaticRun(b, m, i)
	}
	switch i {
	case 0:
		return append(b, s.runs[:s.end0]...)
	case 1:
		return append(b, s.runs[s.end0:s.end1]...)
	}
	return append(b, s.runs[s.end1:]...)
}

// appendStaticRun encodes run i of m's unchanging columns: 0 from
// brokered_at_ms to direction, 1 from header to session_id, 2 target_role.
func appendStaticRun(b []byte, m *Message, i int) []byte {
	switch i {
	case 0:
		b = append(b, `,"brokered_at_ms":`...)
		b = strconv.AppendInt(b, m.BrokeredAtMs, 10)
		b = append(b, `,"channel":`...)
		b = appendJSONString(b, m.Channel)
		b = append(b, `,"direction":`...)
		return appendJSONString(b, m.Direction)
	case 1:
		b = append(b, `,"header":`...)
		b = appendJSONString(b, m.Header)
		b = append(b, `,"message_id":`...)
		b = appendJSONString(b, m.MessageID)
		b = append(b, `,"metadata_json":`...)
		b = appendJSONString(b, m.MetadataJSON)
		b = append(b, `,"priority":`...)
		b = appendJSONString(b, m.Priority)
		b = append(b, `,"row_id":`...)
		b = strconv.AppendInt(b, m.RowID, 10)
		b = append(b, `,"sender_role":`...)
		b = appendJSONString(b, m.SenderRole)
		b = append(b, `,"sent_at_ms":`...)
		b = strconv.AppendInt(b, m.SentAtMs, 10)
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, m.Seq, 10)
		b = append(b, `,"session_id":`...)
		return appendJSONString(b, m.SessionID)
	}
	b = append(b, `,"target_role":`...)
	return appendJSONString(b, m.TargetRole)
}

// chainMAC computes keyed hashes with one ledger key. Not safe for
// concurrent use: the writer and each Verify have their own.
type chainMAC struct {
	key *ledgerKey
	h   hash.Hash
	buf []byte
	sum []byte
}

func newChainMAC(k *ledgerKey) *chainMAC {
	return &chainMAC{key: k, h: k.mac(), buf: make([]byte, 0, 1024), sum: make([]byte, 0, 32)}
}

// event returns hex(HMAC-SHA256(key, prevHash || canonical change)).
func (c *chainMAC) event(prevHash string, eventID int64, messageID, event string, atMs int64, detailJSON string, ch *change) string {
	c.buf = append(c.buf[:0], prevHash...)
	c.buf = appendCanonicalChange(c.buf, eventID, messageID, event, atMs, detailJSON, ch)
	return c.macHex(c.buf)
}

// eventMatches is event compared in constant time with want.
func (c *chainMAC) eventMatches(want, prevHash string, eventID int64, messageID, event string, atMs int64, detailJSON string, ch *change) bool {
	c.buf = append(c.buf[:0], prevHash...)
	c.buf = appendCanonicalChange(c.buf, eventID, messageID, event, atMs, detailJSON, ch)
	return c.matches(want, c.buf)
}

func (c *chainMAC) macHex(data []byte) string {
	c.h.Reset()
	c.h.Write(data)
	c.sum = c.h.Sum(c.sum[:0])
	return hex.EncodeToString(c.sum)
}

func (c *chainMAC) matches(wantHex string, data []byte) bool {
	want, err := hex.DecodeString(wantHex)
	if err != nil || len(want) != 32 {
		return false
	}
	c.h.Reset()
	c.h.Write(data)
	c.sum = c.h.Sum(c.sum[:0])
	return hmac.Equal(c.sum, want)
}

// headPrefix separates chain-head signatures from event hashes.
const headPrefix = "hm ledger chain head\x00"

// headValue is the kv chain_head value: "<event_id>:<hash>:<signature>",
// where the signature is HMAC(key, headPrefix || "<event_id>:<hash>"), so
// a head moved back to an earlier event (a cut tail) needs the key.
func (c *chainMAC) headValue(lastID int64, lastHash string) string {
	c.buf = append(c.buf[:0], headPrefix...)
	n := len(c.buf)
	c.buf = strconv.AppendInt(c.buf, lastID, 10)
	c.buf = append(c.buf, ':')
	c.buf = append(c.buf, lastHash...)
	plain := string(c.buf[n:])
	return plain + ":" + c.macHex(c.buf)
}

// headSigned reports whether sig signs "<event_id>:<hash>".
func (c *chainMAC) headSigned(plain, sig string) bool {
	c.buf = append(append(c.buf[:0], headPrefix...), plain...)
	return c.matches(sig, c.buf)
}
