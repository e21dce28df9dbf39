package journal

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// detailInfo is what Verify reads from an event's detail_json: the body
// hash of a brokered event, the message row's changeable columns after the
// event, and an obligation's reminder time.
type detailInfo struct {
	bodyHash    string
	hasBodyHash bool
	status      string
	hasStatus   bool
	ack         string
	errorCode   string
	attempt     int64
	updatedAtMs int64
	// hasRow: every changeable column is present (events written since
	// the chain is keyed); older events record only status and ack_status.
	hasRow      bool
	remindedAt  int64
	hasReminded bool
}

// parseDetail extracts the values above. Flat objects without escapes
// (everything the ledger writes itself) take a fast path; anything else is
// decoded fully.
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
	num := func(key string) (int64, bool) {
		raw, ok := m[key]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return n, err == nil
	}
	var d detailInfo
	d.bodyHash, d.hasBodyHash = str("body_hash")
	d.status, d.hasStatus = str(detailStatus)
	d.ack, _ = str(detailAckStatus)
	var hasCode, hasAttempt, hasUpdated bool
	d.errorCode, hasCode = str(detailErrorCode)
	d.attempt, hasAttempt = num(detailAttempt)
	d.updatedAtMs, hasUpdated = num(detailUpdatedAtMs)
	d.hasRow = d.hasStatus && hasCode && hasAttempt && hasUpdated
	if _, ok := m[detailAckStatus]; !ok {
		d.hasRow = false
	}
	d.remindedAt, d.hasReminded = num(detailRemindedAtMs)
	return d
}

func parseDetailFast(detail string) (detailInfo, bool) {
	if len(detail) < 2 || detail[0] != '{' || detail[len(detail)-1] != '}' ||
		strings.ContainsAny(detail[1:], "{[\\") || !utf8.ValidString(detail) || !json.Valid([]byte(detail)) {
		return detailInfo{}, false
	}
	var d detailInfo
	var ok, hasAck, hasCode, hasAttempt, hasUpdated bool
	if d.bodyHash, d.hasBodyHash, ok = flatString(detail, `"body_hash":`); !ok {
		return detailInfo{}, false
	}
	if d.status, d.hasStatus, ok = flatString(detail, `"status":`); !ok {
		return detailInfo{}, false
	}
	if d.ack, hasAck, ok = flatString(detail, `"ack_status":`); !ok {
		return detailInfo{}, false
	}
	if d.errorCode, hasCode, ok = flatString(detail, `"error_code":`); !ok {
		return detailInfo{}, false
	}
	if d.attempt, hasAttempt, ok = flatInt(detail, `"attempt":`); !ok {
		return detailInfo{}, false
	}
	if d.updatedAtMs, hasUpdated, ok = flatInt(detail, `"updated_at_ms":`); !ok {
		return detailInfo{}, false
	}
	if d.remindedAt, d.hasReminded, ok = flatInt(detail, `"reminded_at_ms":`); !ok {
		return detailInfo{}, false
	}
	d.hasRow = d.hasStatus && hasAck && hasCode && hasAttempt && hasUpdated
	return d, true
}

// flatValue finds key in a flat, escape-free, valid JSON object and
// returns the text after it. ok is false when the fast path cannot decide
// (key repeated or spaced out).
func flatValue(detail, key string) (rest string, found, ok bool) {
	i := strings.Index(detail, key)
	if i < 0 {
		// A spaced-out `"key" :` would be missed: only trust absence when
		// the bare quoted name is absent too.
		return "", false, !strings.Contains(detail, key[:len(key)-1])
	}
	if strings.Contains(detail[i+len(key):], key) {
		return "", false, false
	}
	return detail[i+len(key):], true, true
}

// flatString is flatValue for a string value (ok is false for another
// kind of value).
func flatString(detail, key string) (val string, found, ok bool) {
	rest, found, ok := flatValue(detail, key)
	if !found {
		return "", false, ok
	}
	if len(rest) == 0 || rest[0] != '"' {
		return "", false, false
	}
	end := strings.IndexByte(rest[1:], '"')
	if end < 0 {
		return "", false, false
	}
	return rest[1 : 1+end], true, true
}

// flatInt is flatValue for an integer value.
func flatInt(detail, key string) (val int64, found, ok bool) {
	rest, found, ok := flatValue(detail, key)
	if !found {
		return 0, false, ok
	}
	end := strings.IndexAny(rest, ",}")
	if end <= 0 {
		return 0, false, false
	}
	n, err := strconv.ParseInt(rest[:end], 10, 64)
	if err != nil {
		return 0, false, false
	}
	return n, true, true
}
