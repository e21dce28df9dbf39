package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// GenesisHash is the prev_hash of the first event: 64 zeros.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// HashEvent returns the unkeyed hash of older versions for one comms_events
// row: hex(sha256(prevHash || AppendCanonicalEvent(...))). Verify accepts
// it only before a ledger_key cut-over; new events are keyed (see the
// package documentation).
func HashEvent(prevHash string, eventID int64, messageID, event string, atMs int64, detailJSON string) string {
	var buf [512]byte
	b := append(buf[:0], prevHash...)
	b = AppendCanonicalEvent(b, eventID, messageID, event, atMs, detailJSON)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AppendCanonicalEvent appends the canonical JSON of an event row to b:
//
//	{"at_ms":A,"detail_json":D,"event":E,"event_id":I,"message_id":M}
//
// Keys are sorted, there is no whitespace, integers are decimal, and D, E, M
// are JSON strings (detail_json is hashed as its stored text, not parsed).
// Strings are escaped like Go's encoding/json with HTML escaping off.
func AppendCanonicalEvent(b []byte, eventID int64, messageID, event string, atMs int64, detailJSON string) []byte {
	b = append(b, `{"at_ms":`...)
	b = strconv.AppendInt(b, atMs, 10)
	b = append(b, ',')
	return appendEventKeys(b, eventID, messageID, event, detailJSON)
}

// appendEventKeys appends the keys every canonical event encoding ends with
// (detail_json, event, event_id, message_id, in key order) and the closing
// brace: shared by the unkeyed rule of older ledgers and the keyed chain.
func appendEventKeys(b []byte, eventID int64, messageID, event, detailJSON string) []byte {
	b = append(b, `"detail_json":`...)
	b = appendJSONString(b, detailJSON)
	b = append(b, `,"event":`...)
	b = appendJSONString(b, event)
	b = append(b, `,"event_id":`...)
	b = strconv.AppendInt(b, eventID, 10)
	b = append(b, `,"message_id":`...)
	b = appendJSONString(b, messageID)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the ASCII bytes appendJSONString copies as they are: one
// table lookup per byte on the chain's hot path instead of three tests.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString quotes s exactly as encoding/json does with
// SetEscapeHTML(false): invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are
// escaped, and control characters use \b \f \n \r \t or \u00XX.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
