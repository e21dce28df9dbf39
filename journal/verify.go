package journal

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Events   int64 `json:"events"`   // event rows checked
	Messages int64 `json:"messages"` // message rows checked
	OK       bool  `json:"ok"`
	// FirstBad names the first problem found, e.g.
	// "comms_events event_id 17 (message_id x): hash mismatch" or
	// "comms_journal row_id 5 (message_id x): body changed".
	FirstBad string `json:"first_bad,omitempty"`
	// Problems counts every problem found.
	Problems int64 `json:"problems"`
	// KeyID is the fingerprint of the ledger key the chain was checked with.
	KeyID string `json:"key_id"`
	// Legacy counts events before the key cut-over, checked with the
	// unkeyed rule of older versions (they cover fewer columns).
	Legacy int64 `json:"legacy_events,omitempty"`
	// Unverifiable counts events made with another ledger key (the key
	// file was lost or replaced): they cannot be checked, so OK is false.
	Unverifiable int64 `json:"unverifiable_events,omitempty"`
	// Foreign counts comms_journal rows another program wrote (status
	// recorded, no event: SquidRun's hm-send.js records each message before
	// sending it). The chain does not cover them; they are not problems.
	Foreign int64 `json:"foreign_rows,omitempty"`
	// Checkpoint is set when a checkpoint was checked: "ok" or the problem.
	Checkpoint string `json:"checkpoint,omitempty"`
}

func (r *VerifyReport) bad(format string, args ...any) {
	r.Problems++
	if r.FirstBad == "" {
		r.FirstBad = fmt.Sprintf(format, args...)
	}
}

// VerifyOptions adds checks to Verify.
type VerifyOptions struct {
	// Checkpoint, when set, must be signed with the ledger key, and the
	// chain must still hold its head at its event count (a cut tail, or a
	// ledger restored from an older copy, fails). The heads kept in
	// Options.HeadPath (and aside beside it) are checked the same way
	// whether or not it is set.
	Checkpoint *Checkpoint
}

// Verify checks the ledger against its keyed hash chain (see the package
// documentation): it recomputes every event's HMAC over the event and the
// full change it records (the message row, and the signals and
// obligations written with it), checks the signed chain head (which
// catches events removed from the end), every current raw_body against
// the body_hash recorded when the message was brokered, that every row's
// changeable columns match the latest event, that every comms_signals and
// comms_obligations row is accounted for by a chained event, and that the
// running per-session counts match a recount of the rows. It reads one
// consistent snapshot. The ledger key is read from Options.KeyPath when
// the ledger has not loaded it. A non-nil error means the check could not
// run (no key: ErrNoKey; unusable key: ErrBadKey); tampering is reported
// through OK and FirstBad.
func (l *Ledger) Verify(ctx context.Context) (VerifyReport, error) {
	return l.VerifyWith(ctx, VerifyOptions{})
}

// VerifyWith is Verify with extra checks.
func (l *Ledger) VerifyWith(ctx context.Context, o VerifyOptions) (VerifyReport, error) {
	key, err := l.ledgerKey()
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal verify: %w", err)
	}
	heads, err := l.headFiles()
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal verify: %w", err)
	}
	if o.Checkpoint != nil {
		heads = append([]*headFile{{label: "checkpoint", cp: o.Checkpoint}}, heads...)
	}
	var r VerifyReport
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		r = VerifyReport{KeyID: key.id}
		v := &verifier{conn: conn, r: &r, mac: newChainMAC(key), states: make(map[string]*verifyState)}
		v.checkHeadSignatures(heads)
		if err := v.loadSide(); err != nil {
			return err
		}
		if err := v.chain(); err != nil {
			return err
		}
		if err := v.messages(); err != nil {
			return err
		}
		v.sideRows()
		return verifyCounts(conn, &r, v.counts.result())
	})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal verify: %w", err)
	}
	if len(heads) > 0 && r.Checkpoint == "" {
		r.Checkpoint = "ok"
	}
	r.OK = r.Problems == 0
	return r, nil
}

// verifier is the state of one Verify run.
type verifier struct {
	conn   *sqlite.Conn
	r      *VerifyReport
	mac    *chainMAC
	heads  []headCheck // heads kept outside the ledger, signed with its key
	states map[string]*verifyState
	counts groupCounter

	signals     map[string][]Signal // by message_id, in signal_id order
	allSignals  []Signal
	resolved    map[string][]int64 // resolver message_id → signal ids
	obligations map[string]*Obligation
	allObl      []*Obligation
}

// verifyState is what the event chain says about one message.
type verifyState struct {
	firstID    int64    // event_id of its first event
	brokeredID int64    // event_id of its first brokered event (0: none)
	bodyHash   [32]byte // body_hash recorded there
	hashOK     bool     // body_hash present and well-formed
	seen       bool     // its comms_journal row exists

	// The changeable columns after the latest event recording them.
	status, ack, errorCode string
	attempt, updatedAtMs   int64
	hasState, hasRow       bool

	closedID    int64 // event_id of its obligation_closed event (0: none)
	remindedAt  int64 // from its latest obligation_reminded event
	hasReminded bool
}
