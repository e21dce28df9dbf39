package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"zombiezen.com/go/sqlite"
)

// CheckpointVersion is the format of Checkpoint.
const CheckpointVersion = 1

// ErrBadCheckpoint means a checkpoint file is not a checkpoint.
var ErrBadCheckpoint = errors.New("journal: not a ledger checkpoint")

// Checkpoint is a signed statement of the chain head: kept outside the
// ledger (git, Telegram), it proves later that the ledger still holds every
// event up to it (SPEC §9). MAC is the hex HMAC-SHA256, with the ledger
// key, of checkpointPrefix and the other fields' canonical JSON.
type Checkpoint struct {
	Version     int    `json:"version"`
	Events      int64  `json:"events"`
	LastEventID int64  `json:"last_event_id"`
	HeadHash    string `json:"head_hash"`
	AtMs        int64  `json:"at_ms"`
	KeyID       string `json:"key_id"`
	MAC         string `json:"mac"`
}

const checkpointPrefix = "hm ledger checkpoint\x00"

func (c *Checkpoint) signed() []byte {
	b := append([]byte(checkpointPrefix), `{"at_ms":`...)
	b = strconv.AppendInt(b, c.AtMs, 10)
	b = append(b, `,"events":`...)
	b = strconv.AppendInt(b, c.Events, 10)
	b = append(b, `,"head_hash":`...)
	b = appendJSONString(b, c.HeadHash)
	b = append(b, `,"key_id":`...)
	b = appendJSONString(b, c.KeyID)
	b = append(b, `,"last_event_id":`...)
	b = strconv.AppendInt(b, c.LastEventID, 10)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	return append(b, '}')
}

// ParseCheckpoint decodes a checkpoint (its signature is checked by
// VerifyWith).
func ParseCheckpoint(data []byte) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrBadCheckpoint, err)
	}
	if c.Version != CheckpointVersion || c.MAC == "" || c.HeadHash == "" || c.Events != c.LastEventID || c.Events < 0 {
		return Checkpoint{}, fmt.Errorf("%w: missing or inconsistent fields", ErrBadCheckpoint)
	}
	return c, nil
}

// Checkpoint signs the current chain head with the ledger key. The writer
// first brings the head to the last committed event (head.go); the head is
// then read from kv chain_head and must carry a valid signature itself, so
// a head rewritten without the key is never signed.
func (l *Ledger) Checkpoint(ctx context.Context) (Checkpoint, error) {
	key, err := l.ledgerKey()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("journal checkpoint: %w", err)
	}
	if err := l.signHead(ctx); err != nil {
		return Checkpoint{}, fmt.Errorf("journal checkpoint: %w", err)
	}
	mac := newChainMAC(key)
	var id int64
	hash := GenesisHash
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		head, found := "", false
		if err := execArgs(conn, "SELECT value FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
			head, found = stmt.ColumnText(0), true
			return nil
		}, kvChainHead); err != nil {
			return fmt.Errorf("read chain head: %w", err)
		}
		if !found {
			return nil
		}
		idText, rest, _ := strings.Cut(head, ":")
		h, sig, _ := strings.Cut(rest, ":")
		n, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || !mac.headSigned(idText+":"+h, sig) {
			return errors.New("the chain head is not signed with the ledger key (run hm journal verify)")
		}
		id, hash = n, h
		return nil
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("journal checkpoint: %w", err)
	}
	return mac.checkpoint(id, hash, l.now().UnixMilli()), nil
}

// headCheck is a head kept outside the ledger that the chain walk checks:
// the hash of the event it names, once seen.
type headCheck struct {
	cp    *Checkpoint
	label string
	hash  string
	found bool
}

// checkHeadSignatures runs before the chain walk: a head that is not a
// checkpoint, or not signed with the ledger key, is a problem; the others
// are checked against the chain (checkHeads).
func (v *verifier) checkHeadSignatures(heads []*headFile) {
	for _, h := range heads {
		problem := ""
		if h.err != nil {
			problem = fmt.Sprintf("%s: %v", h.label, h.err)
		} else {
			problem = v.mac.checkpointProblem(h.cp, h.label)
		}
		if problem != "" {
			v.checkpointBad(problem)
			continue
		}
		v.heads = append(v.heads, headCheck{cp: h.cp, label: h.label})
	}
}

// seeHeads records the hash of event id for the heads that name it.
func (v *verifier) seeHeads(id int64, hash string) {
	for i := range v.heads {
		if v.heads[i].cp.LastEventID == id {
			v.heads[i].hash, v.heads[i].found = hash, true
		}
	}
}

// checkHeads runs after the chain walk: the chain must hold every head.
func (v *verifier) checkHeads(lastID int64) {
	for _, h := range v.heads {
		if problem := headMissing(h.cp, h.label, lastID, h.hash, h.found); problem != "" {
			v.checkpointBad(problem)
		}
	}
}

// checkpointBad reports a problem with a head kept outside the ledger.
func (v *verifier) checkpointBad(msg string) {
	if v.r.Checkpoint == "" {
		v.r.Checkpoint = msg
	}
	v.r.bad("%s", msg)
}
