package journal

import (
	"encoding/json"
	"reflect"
	"testing"

	"hm/internal/ground/status"
)

// marshalStateDetail is what stateDetail wrote before it encoded by hand:
// the detail map with the row's state columns, through encoding/json.
func marshalStateDetail(detail map[string]any, row Message) (string, error) {
	m := make(map[string]any, len(detail)+len(stateKeys))
	for k, v := range detail {
		m[k] = v
	}
	m[detailStatus], m[detailAckStatus], m[detailErrorCode] = row.Status, row.AckStatus, row.ErrorCode
	m[detailAttempt], m[detailUpdatedAtMs] = row.Attempt, row.UpdatedAtMs
	j, err := json.Marshal(m)
	return string(j), err
}

// sameDetail checks that stateDetail's output is JSON with the same value
// as encoding/json's, and that the details Verify reads parse alike.
func sameDetail(t *testing.T, detail map[string]any, row Message) {
	t.Helper()
	got, err := stateDetail(detail, row)
	if err != nil {
		t.Fatalf("stateDetail(%v) = %v", detail, err)
	}
	want, err := marshalStateDetail(detail, row)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("stateDetail wrote invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("stateDetail = %s\nencoding/json = %s", got, want)
	}
	if pg, pw := parseDetail(got), parseDetail(want); pg != pw {
		t.Fatalf("parsed detail %+v, want %+v", pg, pw)
	}
}

func TestStateDetail(t *testing.T) {
	t.Parallel()
	row := Message{Status: status.Routed, AckStatus: status.DeliveredWebSocket, ErrorCode: status.CodeTelegramFailed, Attempt: 3, UpdatedAtMs: 1700000000123}
	cases := []struct {
		name   string
		detail map[string]any
	}{
		{"nil", nil},
		{"empty", map[string]any{}},
		{"hot path", map[string]any{"pane": "builder", "proven": true, "by": "oracle"}},
		{"integers", map[string]any{"copies": 2, "ageMs": int64(-5), "big": int64(1) << 62}},
		{"state keys replaced by the row", map[string]any{detailStatus: "forged", detailAttempt: 99, "zz": "last"}},
		{"escapes", map[string]any{"error": "line\nbreak \"quoted\" <html> & \u2028 \x01", "ключ": "значение"}},
		{"invalid UTF-8", map[string]any{"error": "bad \xff byte"}},
		{"other types through encoding/json", map[string]any{"f": 1.5, "list": []string{"a", "b"}, "nested": map[string]any{"b": 1, "a": nil}, "null": nil, "status": status.Acked}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { sameDetail(t, tc.detail, row) })
	}
	if _, err := stateDetail(map[string]any{"ch": make(chan int)}, row); err == nil {
		t.Fatal("a value encoding/json cannot encode was accepted")
	}
}

func FuzzStateDetail(f *testing.F) {
	f.Add("pane", "builder", "error", "x\ny", int64(3), "delivered.websocket")
	f.Add("status", "\xff", "", "\u2028", int64(-1), "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n int64, ack string) {
		row := Message{Status: status.Acked, AckStatus: status.Stage(ack), Attempt: n, UpdatedAtMs: n}
		sameDetail(t, map[string]any{k1: v1, k2: v2, "n": n}, row)
	})
}
