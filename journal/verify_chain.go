package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
)

// chainRun tracks, while walking the chain, the events that matched neither
// rule: a run of them is reported as tampering, or as unverifiable when it
// was made with another ledger key.
type chainRun struct {
	start, end int64
	msgID      string
	n          int64
	keyID      string // key_id of the ledger_key event that starts it
}

const eventsQuery = eventsSelect + ` ORDER BY e.event_id`

// eventsSelect reads events joined with their message rows (readJoinedRow).
const eventsSelect = `SELECT e.event_id, e.message_id, e.event, e.at_ms, e.detail_json, e.prev_hash, e.hash,
 j.row_id, j.session_id, j.sender_role, j.target_role, j.channel, j.direction, j.seq, j.header, j.priority,
 j.sent_at_ms, j.brokered_at_ms, j.body_hash, j.body_bytes, j.metadata_json
 FROM comms_events e LEFT JOIN comms_journal j ON j.message_id = e.message_id`

// chain walks comms_events in order. Events before the first ledger_key
// event may use the unkeyed rule of older versions (legacy), and are
// accepted only when that ledger_key event records the upgrade; every
// other event must carry the HMAC, under the current key, of the event and
// the change it records. See the package documentation.
func (v *verifier) chain() error {
	r := v.r
	expectPrev := GenesisHash
	var lastID int64
	var legacyN, legacyFirst int64
	legacyMsg := ""
	seenKeyed := false
	var run chainRun
	var row Message
	var legacyBuf []byte

	closeRun := func(at string, prevKey string) {
		if run.n == 0 {
			return
		}
		other := run.keyID
		if other == "" || other == v.mac.key.id {
			other = prevKey
		}
		if other != "" && other != v.mac.key.id {
			r.Unverifiable += run.n
			r.bad("comms_events event_id %d..%d: %d events made with ledger key %s, not the current key %s (the key file was lost or replaced): unverifiable%s",
				run.start, run.end, run.n, other, v.mac.key.id, at)
		} else {
			r.bad("comms_events event_id %d (message_id %s): hash mismatch (the event, its message row, or the signals or obligations it records were changed)", run.start, run.msgID)
			r.Problems += run.n - 1
		}
		run = chainRun{}
	}

	err := execArgs(v.conn, eventsQuery, func(stmt *sqlite.Stmt) error {
		r.Events++
		id := stmt.ColumnInt64(0)
		msgID, event, detail := stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(4)
		atMs := stmt.ColumnInt64(3)
		prev, hash := stmt.ColumnText(5), stmt.ColumnText(6)
		switch {
		case id == lastID+2:
			r.bad("comms_events event_id %d: event_id %d missing", id, lastID+1)
		case id != lastID+1:
			r.bad("comms_events event_id %d: event_ids %d..%d missing", id, lastID+1, id-1)
		case prev != expectPrev:
			r.bad("comms_events event_id %d: prev_hash does not match event_id %d", id, lastID)
		}
		expectPrev, lastID = hash, id
		v.seeHeads(id, hash)

		isKey := status.Event(event) == status.EventLedgerKey && msgID == ""
		d := parseDetail(detail)
		var st *verifyState
		first := false
		if !isKey {
			st = v.states[msgID]
			if st == nil {
				st = &verifyState{firstID: id}
				v.states[msgID] = st
				first = true
			}
		}

		// The change this event records, rebuilt from the tables.
		ch := change{}
		rowMissing := false
		if !isKey {
			if stmt.ColumnType(7) == sqlite.TypeNull {
				rowMissing = true
			} else {
				readJoinedRow(stmt, &row, msgID, &d)
				ch.row = &row
			}
			if first {
				ch.signals = v.signals[msgID]
				ch.resolved = v.resolved[msgID]
				if o := v.obligations[msgID]; o != nil {
					ch.obligation = o
				}
			}
			if status.Event(event) == status.EventObligationClosed {
				closed := &Obligation{}
				if o := v.obligations[msgID]; o != nil {
					closed = o
				}
				ch.closed = closed
			}
		}

		switch {
		case rowMissing:
			// Reported as a deleted row once the rows are read.
		case v.mac.eventMatches(hash, prev, id, msgID, event, atMs, detail, &ch):
			if !seenKeyed && legacyN > 0 {
				kd, _ := parseKeyDetail(detail)
				switch {
				case !isKey:
					r.bad("comms_events event_id %d (message_id %s): hashed without the ledger key (the unkeyed rule of older versions) up to event_id %d, and no key cut-over follows: the chain was rewritten without the key",
						legacyFirst, legacyMsg, legacyFirst+legacyN-1)
				case kd.Reason != keyReasonUpgrade:
					r.bad("comms_events event_id %d (message_id %s): hashed without the ledger key up to event_id %d although the key existed (cut-over at event_id %d, %s): the chain was rewritten without the key",
						legacyFirst, legacyMsg, legacyFirst+legacyN-1, id, kd.Reason)
				default:
					r.Legacy = legacyN
				}
			}
			if isKey {
				kd, _ := parseKeyDetail(detail)
				closeRun("", kd.PreviousKeyID)
			} else {
				closeRun("", "")
			}
			seenKeyed = true
		case !seenKeyed && run.n == 0 && !isKey && hashLegacy(&legacyBuf, prev, id, msgID, event, atMs, detail) == hash:
			if legacyN == 0 {
				legacyFirst, legacyMsg = id, msgID
			}
			legacyN++
		default:
			if run.n == 0 {
				run = chainRun{start: id, msgID: msgID}
				if isKey {
					kd, _ := parseKeyDetail(detail)
					run.keyID = kd.KeyID
				}
			}
			run.end = id
			run.n++
		}

		if st == nil {
			return nil
		}
		if status.Event(event) == status.EventBrokered && st.brokeredID == 0 {
			st.brokeredID = id
			if d.hasBodyHash && len(d.bodyHash) == 64 {
				_, err := hex.Decode(st.bodyHash[:], []byte(d.bodyHash))
				st.hashOK = err == nil
			}
		}
		if d.hasStatus {
			st.status, st.ack, st.hasState = d.status, d.ack, true
			st.hasRow = d.hasRow
			st.errorCode, st.attempt, st.updatedAtMs = d.errorCode, d.attempt, d.updatedAtMs
		}
		switch status.Event(event) {
		case status.EventObligationClosed:
			if st.closedID == 0 {
				st.closedID = id
			}
		case status.EventObligationReminded:
			if d.hasReminded {
				st.remindedAt, st.hasReminded = d.remindedAt, true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	if !seenKeyed && legacyN > 0 {
		r.bad("comms_events event_id %d (message_id %s): hashed without the ledger key (the unkeyed rule of older versions) up to event_id %d, and no key cut-over follows: the chain was rewritten without the key, or no hub has run since the upgrade",
			legacyFirst, legacyMsg, legacyFirst+legacyN-1)
	}
	recorded, err := v.kv(kvLedgerKeyID)
	if err != nil {
		return err
	}
	closeRun(" (per kv ledger_key_id)", recorded)
	if err := v.head(lastID, expectPrev, seenKeyed); err != nil {
		return err
	}
	v.checkHeads(lastID)
	return nil
}

// hashLegacy is HashEvent reusing buf.
func hashLegacy(buf *[]byte, prev string, id int64, msgID, event string, atMs int64, detail string) string {
	b := append((*buf)[:0], prev...)
	b = AppendCanonicalEvent(b, id, msgID, event, atMs, detail)
	*buf = b
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readJoinedRow fills m from the comms_journal columns of eventsQuery and
// the changeable columns recorded in the event's detail.
func readJoinedRow(stmt *sqlite.Stmt, m *Message, msgID string, d *detailInfo) {
	*m = Message{
		RowID: stmt.ColumnInt64(7), MessageID: msgID, SessionID: stmt.ColumnText(8), SenderRole: stmt.ColumnText(9),
		TargetRole: stmt.ColumnText(10), Channel: stmt.ColumnText(11), Direction: stmt.ColumnText(12), Seq: stmt.ColumnInt64(13),
		Header: stmt.ColumnText(14), Priority: stmt.ColumnText(15), SentAtMs: stmt.ColumnInt64(16), BrokeredAtMs: stmt.ColumnInt64(17),
		BodyHash: stmt.ColumnText(18), BodyBytes: stmt.ColumnInt64(19), MetadataJSON: stmt.ColumnText(20),
		Status: statusOf(d.status), AckStatus: stageOf(d.ack), ErrorCode: codeOf(d.errorCode), Attempt: d.attempt, UpdatedAtMs: d.updatedAtMs,
	}
}

func statusOf(s string) status.Status { return status.Status(s) }
func stageOf(s string) status.Stage   { return status.Stage(s) }
func codeOf(s string) status.Code     { return status.Code(s) }

// kv reads one kv value ("" when absent).
func (v *verifier) kv(key string) (string, error) {
	val := ""
	if err := execArgs(v.conn, "SELECT value FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
		val = stmt.ColumnText(0)
		return nil
	}, key); err != nil {
		return "", fmt.Errorf("read kv %s: %w", key, err)
	}
	return val, nil
}

// head checks kv chain_head, "<event_id>:<hash>:<signature>": once the
// chain is keyed it must be signed with the key, so moving it back over a
// cut tail needs the key, and it must name an event of the chain with that
// event's hash. The writer signs it lazily (head.go), so it may name an
// event before the last: a running hub's, or one killed with -9.
func (v *verifier) head(lastID int64, lastHash string, keyed bool) error {
	r := v.r
	head, found := "", false
	if err := execArgs(v.conn, "SELECT value FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
		head, found = stmt.ColumnText(0), true
		return nil
	}, kvChainHead); err != nil {
		return fmt.Errorf("read chain head: %w", err)
	}
	switch {
	case !found && lastID == 0:
		return nil
	case !found:
		r.bad("kv chain_head: missing (comms_events has %d events)", r.Events)
		return nil
	}
	idText, rest, _ := strings.Cut(head, ":")
	hash, sig, signed := strings.Cut(rest, ":")
	plain := idText + ":" + hash
	if keyed && (!signed || !v.mac.headSigned(plain, sig)) {
		r.bad("kv chain_head: not signed with the ledger key (it was rewritten, e.g. after events were removed at the end)")
		return nil
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	switch {
	case err != nil || id < 0:
		r.bad("kv chain_head: %q names no event", idText)
		return nil
	case id > lastID:
		r.bad("comms_events: chain head records event_id %s but the chain ends at event_id %d (events removed or altered at the end)", idText, lastID)
		return nil
	case id == lastID:
		if hash != lastHash {
			r.bad("comms_events: chain head records event_id %s but the chain ends at event_id %d (events removed or altered at the end)", idText, lastID)
		}
		return nil
	}
	want, ok := GenesisHash, id == 0
	if err := execArgs(v.conn, "SELECT hash FROM comms_events WHERE event_id = ?", func(stmt *sqlite.Stmt) error {
		want, ok = stmt.ColumnText(0), true
		return nil
	}, id); err != nil {
		return fmt.Errorf("read the chain head's event: %w", err)
	}
	if !ok || hash != want {
		r.bad("comms_events event_id %d: differs from the chain head's record of it (events removed or altered)", id)
	}
	return nil
}

// ChainEvent is one of a message's events as the hash chain holds it.
type ChainEvent struct {
	Event  status.Event
	AtMs   int64
	Detail string // detail_json as stored
	Hash   string
}

// MessageChain reads messageID's events, in order, with their hashes, and
// reports whether each links to the event before it in the ledger (its
// prev_hash is that event's hash, or GenesisHash for the first event). The
// events' keyed hashes are Verify's to check. found is false when the
// message has no events.
func (l *Ledger) MessageChain(ctx context.Context, messageID string) (events []ChainEvent, linked, found bool, err error) {
	linked = true
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, `SELECT e.event, e.at_ms, e.detail_json, e.hash, e.prev_hash, e.event_id,
 (SELECT p.hash FROM comms_events p WHERE p.event_id = e.event_id - 1)
 FROM comms_events e WHERE e.message_id = ? ORDER BY e.event_id`, func(stmt *sqlite.Stmt) error {
			events = append(events, ChainEvent{Event: status.Event(stmt.ColumnText(0)), AtMs: stmt.ColumnInt64(1), Detail: stmt.ColumnText(2), Hash: stmt.ColumnText(3)})
			prev, id := stmt.ColumnText(4), stmt.ColumnInt64(5)
			want := GenesisHash
			if id > 1 {
				if stmt.ColumnType(6) == sqlite.TypeNull {
					linked = false // the event before it is missing
					return nil
				}
				want = stmt.ColumnText(6)
			}
			if prev != want {
				linked = false
			}
			return nil
		}, messageID)
	})
	if err != nil {
		return nil, false, false, fmt.Errorf("journal chain of %s: %w", messageID, err)
	}
	return events, linked, len(events) > 0, nil
}
