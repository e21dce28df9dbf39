package roles

import (
	"strconv"
	"strings"
)

// SessionPrefix starts every session id: session N is "app-session-N".
const SessionPrefix = "app-session-"

// SessionID returns the id of session n, "app-session-N".
func SessionID(n int) string { return SessionPrefix + strconv.Itoa(n) }

// SessionNumber parses "app-session-N" and returns N; ok is false for any
// other form.
func SessionNumber(id string) (n int, ok bool) {
	digits, found := strings.CutPrefix(id, SessionPrefix)
	if !found || digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}
