// Package msgid makes and checks hm message ids. Its one job: New(now) makes
// a fresh id in the SPEC form "hm-<unixms>-<6 random>", and Valid(id) is the
// single rule every part of hm (the broker, trigger files, hm-send) applies to
// an id given to it.
//
// A valid id is 1 to MaxLen bytes of ASCII letters, digits, '-', '_', '.' and
// ':', starting with a letter or digit. Such an id is safe as one file-name
// component (trigger files are named "<target>.<id>.txt"): it has no path
// separator, NUL, space or control character, is never "." or "..", and
// cannot be mistaken for a dotfile or a command-line option.
//
// Ids the hub makes for its own rows live in namespaces clients cannot use:
// Reserved(id) reports them, and the constructors below (TelegramIn,
// TelegramRefused, TelegramOut, TelegramPart, Session, Reminder, and the
// TriggerPrefix of ids derived for trigger files) are the only makers. The
// hub refuses a client-chosen id in a reserved namespace with reserved_id,
// so no client can take the id of a row the hub will make later (an
// inbound Telegram update's "telegram-in-<update_id>", fixed by SPEC §11).
package msgid

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Reserved namespaces: the prefixes of ids the hub makes for its own rows.
const (
	// TelegramPrefix starts every id of a Telegram row: inbound updates
	// (TelegramIn), refused updates (TelegramRefused), outbound messages
	// sent without a ledger parent (TelegramOut) and outbound parts
	// (TelegramPart).
	TelegramPrefix = "telegram-"
	// SessionPrefix starts a pane's startup line (Session).
	SessionPrefix = "session-"
	// ReminderPrefix starts an obligation reminder (Reminder).
	ReminderPrefix = "reminder-"
	// TriggerPrefix starts the id derived for a trigger file that names
	// none ("trg-<hex16>", triggers.DerivedID).
	TriggerPrefix = "trg-"
	// SystemPrefix is kept for ids of any other row the hub makes.
	SystemPrefix = "sys-"
)

// reserved lists the reserved prefixes.
var reserved = []string{TelegramPrefix, SessionPrefix, ReminderPrefix, TriggerPrefix, SystemPrefix}

// Reserved reports whether id lies in a namespace the hub keeps for its own
// rows. Prefixes match case-insensitively, so "Telegram-In-1" is reserved
// too.
func Reserved(id string) bool {
	for _, p := range reserved {
		if len(id) >= len(p) && strings.EqualFold(id[:len(p)], p) {
			return true
		}
	}
	return false
}

// ReservedPrefixes returns the reserved prefixes, for messages and docs.
func ReservedPrefixes() []string { return append([]string(nil), reserved...) }

// TelegramIn is the row id of an inbound Telegram update (SPEC §11).
func TelegramIn(updateID int64) string {
	return TelegramPrefix + "in-" + strconv.FormatInt(updateID, 10)
}

// TelegramRefused is the row id recording an update from a chat that is not
// allowed in.
func TelegramRefused(updateID int64) string {
	return TelegramPrefix + "refused-" + strconv.FormatInt(updateID, 10)
}

// TelegramOut is a fresh parent id for an outbound Telegram message that has
// no ledger row of its own.
func TelegramOut(now time.Time) string {
	return TelegramPrefix + "out-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + random6()
}

// TelegramPart is the row id of part n (from 1) of the outbound Telegram
// message parent. It is unique per row: parent ids are unique in the
// ledger, and the prefix keeps it out of the ids clients may choose.
func TelegramPart(parent string, n int) string {
	if !strings.HasPrefix(parent, TelegramPrefix) {
		parent = TelegramPrefix + parent
	}
	return fit(parent + "-part-" + strconv.Itoa(n))
}

// Session is the row id of the startup line of role's pane in session n.
func Session(n int, role string) string {
	return fit(SessionPrefix + strconv.Itoa(n) + "-" + role)
}

// Reminder is the row id of the one reminder for the obligation opened by
// the message obligationID.
func Reminder(obligationID string) string { return fit(ReminderPrefix + obligationID) }

// Stuck is the row id of the notice telling a sender that its message
// messageID is stuck at a pane (one per message).
func Stuck(messageID string) string { return fit(SystemPrefix + "stuck-" + messageID) }

// Failed is the row id of the notice telling a sender that a pane could
// not take its message (failed, pane_failed).
func Failed(messageID string) string { return fit(SystemPrefix + "failed-" + messageID) }

// Waiting is the row id of the one notice telling the human that role's
// pane has waited for a person since since (one per waiting spell).
func Waiting(role string, since time.Time) string {
	return fit(SystemPrefix + "waiting-" + role + "-" + strconv.FormatInt(since.UnixMilli(), 10))
}

// fit keeps id within MaxLen: a longer id keeps its first bytes and ends
// with a hash of the whole.
func fit(id string) string {
	if len(id) <= MaxLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return id[:MaxLen-17] + "-" + hex.EncodeToString(sum[:8])
}

// MaxLen is the longest valid id, in bytes.
const MaxLen = 128

// New returns a fresh id "hm-<unixms>-<6 random>", the random part of
// lower-case letters and digits.
func New(now time.Time) string {
	return "hm-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + random6()
}

// random6 returns 6 random lower-case letters and digits.
func random6() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

// Valid reports whether id is an acceptable message id: 1 to MaxLen bytes,
// starting with an ASCII letter or digit, then ASCII letters, digits, '-',
// '_', '.' or ':'.
func Valid(id string) bool {
	if id == "" || len(id) > MaxLen || !alnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '-' && c != '_' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
