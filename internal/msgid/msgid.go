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
package msgid

import (
	"crypto/rand"
	"strconv"
	"time"
)

// MaxLen is the longest valid id, in bytes.
const MaxLen = 128

// New returns a fresh id "hm-<unixms>-<6 random>", the random part of
// lower-case letters and digits.
func New(now time.Time) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "hm-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + string(b[:])
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
