package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"hm/internal/ground/status"
)

func TestStatusAndAckRank(t *testing.T) {
	t.Parallel()
	order := []status.Status{status.Recorded, status.Brokered, status.Failed, status.Routed, status.Acked}
	for i, s := range order {
		if got := s.Rank(); got != i {
			t.Errorf("StatusRank(%q) = %d, want %d", s, got, i)
		}
	}
	acks := []status.Stage{status.StageNone, status.AcceptedUnverified, status.DeliveredWebSocket, status.DeliveredVerified}
	for i, s := range acks {
		if got := s.Rank(); got <= acks[max(i-1, 0)].Rank() && i > 0 {
			t.Errorf("AckRank(%q) = %d, want %d", s, got, i)
		}
	}
	for _, s := range []string{"bogus", "ROUTED", " acked"} {
		if status.Status(s).Rank() != -1 || status.Stage(s).Rank() != -1 {
			t.Errorf("rank of unknown %q should be -1", s)
		}
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	base := Message{MessageID: "m", Status: status.Brokered, UpdatedAtMs: 100}
	with := func(f func(*Message)) Message { m := base; f(&m); return m }
	tests := []struct {
		name    string
		cur     Message
		change  Change
		want    Message
		changed bool
	}{
		{"empty change", base, Change{AtMs: 200}, base, false},
		{"brokered to routed", base, Change{Status: status.Routed, AtMs: 200},
			with(func(m *Message) { m.Status = status.Routed; m.UpdatedAtMs = 200 }), true},
		{"routed never back to brokered", with(func(m *Message) { m.Status = status.Routed }), Change{Status: status.Brokered, AtMs: 200},
			with(func(m *Message) { m.Status = status.Routed }), false},
		{"failure sets error code", base, Change{Status: status.Failed, ErrorCode: "no_route", AtMs: 200},
			with(func(m *Message) { m.Status = status.Failed; m.ErrorCode = "no_route"; m.UpdatedAtMs = 200 }), true},
		{"failure never overwrites routed", with(func(m *Message) { m.Status = status.Routed }), Change{Status: status.Failed, ErrorCode: "pane_exited", AtMs: 200},
			with(func(m *Message) { m.Status = status.Routed }), false},
		{"failure never overwrites acked", with(func(m *Message) { m.Status = status.Acked }), Change{Status: status.Failed, ErrorCode: "x", AtMs: 200},
			with(func(m *Message) { m.Status = status.Acked }), false},
		{"second failure keeps first code", with(func(m *Message) { m.Status = status.Failed; m.ErrorCode = "a" }), Change{Status: status.Failed, ErrorCode: "b", AtMs: 200},
			with(func(m *Message) { m.Status = status.Failed; m.ErrorCode = "a" }), false},
		{"proof of delivery overwrites failed", with(func(m *Message) { m.Status = status.Failed; m.ErrorCode = "a" }), Change{Status: status.Acked, AtMs: 200},
			with(func(m *Message) { m.Status = status.Acked; m.ErrorCode = "a"; m.UpdatedAtMs = 200 }), true},
		{"error code ignored without failure", base, Change{Status: status.Routed, ErrorCode: "zzz", AtMs: 200},
			with(func(m *Message) { m.Status = status.Routed; m.UpdatedAtMs = 200 }), true},
		{"unknown status ignored", base, Change{Status: "teleported", AtMs: 200}, base, false},
		{"ack rises", base, Change{AckStatus: status.AcceptedUnverified, AtMs: 200},
			with(func(m *Message) { m.AckStatus = status.AcceptedUnverified; m.UpdatedAtMs = 200 }), true},
		{"ack never falls", with(func(m *Message) { m.AckStatus = status.DeliveredVerified }), Change{AckStatus: status.DeliveredWebSocket, AtMs: 200},
			with(func(m *Message) { m.AckStatus = status.DeliveredVerified }), false},
		{"ack websocket to verified", with(func(m *Message) { m.AckStatus = status.DeliveredWebSocket }), Change{AckStatus: status.DeliveredVerified, AtMs: 200},
			with(func(m *Message) { m.AckStatus = status.DeliveredVerified; m.UpdatedAtMs = 200 }), true},
		{"attempt increments", base, Change{IncAttempt: true, AtMs: 200},
			with(func(m *Message) { m.Attempt = 1; m.UpdatedAtMs = 200 }), true},
		{"zero AtMs keeps updated", base, Change{Status: status.Routed},
			with(func(m *Message) { m.Status = status.Routed }), true},
		{"status and ack together", base, Change{Status: status.Routed, AckStatus: status.DeliveredWebSocket, IncAttempt: true, AtMs: 300},
			with(func(m *Message) {
				m.Status, m.AckStatus, m.Attempt, m.UpdatedAtMs = status.Routed, status.DeliveredWebSocket, 1, 300
			}), true},
		{"from unknown current status", with(func(m *Message) { m.Status = "weird" }), Change{Status: status.Recorded, AtMs: 200},
			with(func(m *Message) { m.Status = status.Recorded; m.UpdatedAtMs = 200 }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Merge(tt.cur, tt.change)
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if got.Status != tt.want.Status || got.AckStatus != tt.want.AckStatus || got.ErrorCode != tt.want.ErrorCode ||
				got.Attempt != tt.want.Attempt || got.UpdatedAtMs != tt.want.UpdatedAtMs {
				t.Errorf("Merge = %+v\nwant   %+v", got, tt.want)
			}
		})
	}
}

func TestNormalizeRef(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"ARCH #12", "ARCH #12"},
		{"arch #12", "ARCH #12"},
		{" arch#12 ", "ARCH #12"},
		{"Builder-BG-2   #007", "BUILDER-BG-2 #7"},
		{"no ref", "NO REF"},
		{"", ""},
		{"X #abc", "X #abc"},
	}
	for _, tt := range tests {
		if got := NormalizeRef(tt.in); got != tt.want {
			t.Errorf("NormalizeRef(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (Message{Header: "arch", Seq: 3}).Ref(); got != "ARCH #3" {
		t.Errorf("Ref() = %q", got)
	}
	if got := (Message{Header: "ARCH"}).Ref(); got != "" {
		t.Errorf("Ref() without seq = %q", got)
	}
}

func FuzzNormalizeRef(f *testing.F) {
	for _, s := range []string{"ARCH #1", "arch#01", " x # 2 ", "##", "#", "BUILDER-BG-3 #99999999999999999999", "\xff #1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeRef(s)
		if again := NormalizeRef(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, again)
		}
	})
}

// encodingJSON is the reference: encoding/json without HTML escaping.
func encodingJSON(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	tests := []string{"", "plain", `q"uote\back`, "tab\tnl\nret\r\b\f", "\x00\x1f\x7f", "<html>&amp;", "ünï 🚀", "\xff\xfe bad", "\u2028\u2029"}
	for _, s := range tests {
		got := appendJSONString(nil, s)
		if want := encodingJSON(s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00", "\u2028", "\xc3", "é", "<>&", "{\"k\":1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString(nil, s)
		if want := encodingJSON(s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestCanonicalEvent(t *testing.T) {
	t.Parallel()
	got := string(AppendCanonicalEvent(nil, 17, "hm-1", "routed", 1700000000000, `{"status":"routed"}`))
	want := `{"at_ms":1700000000000,"detail_json":"{\"status\":\"routed\"}","event":"routed","event_id":17,"message_id":"hm-1"}`
	if got != want {
		t.Fatalf("canonical = %s\nwant        %s", got, want)
	}
	// Same as encoding/json of a map (sorted keys).
	ref, _ := json.Marshal(map[string]any{"at_ms": 1700000000000, "detail_json": `{"status":"routed"}`, "event": "routed", "event_id": 17, "message_id": "hm-1"})
	if got != string(ref) {
		t.Fatalf("canonical differs from encoding/json: %s vs %s", got, ref)
	}
	h1 := HashEvent(GenesisHash, 1, "a", "brokered", 1, "{}")
	h2 := HashEvent(GenesisHash, 1, "a", "brokered", 2, "{}")
	if len(h1) != 64 || h1 == h2 {
		t.Fatalf("hashes %s %s", h1, h2)
	}
}

func TestParseDetail(t *testing.T) {
	t.Parallel()
	h := "57335a613cd7e01aea300ed1f1d652d65f0fa1bb60b96df2206b842d8016a134"
	tests := []struct {
		detail string
		want   detailInfo
	}{
		{`{"body_bytes":3,"body_hash":"` + h + `","status":"brokered"}`, detailInfo{bodyHash: h, hasBodyHash: true, status: "brokered", hasStatus: true}},
		{`{"ack_status":"delivered.verified","status":"acked"}`, detailInfo{status: "acked", hasStatus: true, ack: "delivered.verified"}},
		{`{"status": "routed", "body_hash" : "x"}`, detailInfo{bodyHash: "x", hasBodyHash: true, status: "routed", hasStatus: true}},
		{`{"meta":{"status":"nested"},"status":"routed"}`, detailInfo{status: "routed", hasStatus: true}},
		{`{"meta":{"status":"nested"}}`, detailInfo{}},
		{`{"note":"say \"status\":\"x\"","status":"failed"}`, detailInfo{status: "failed", hasStatus: true}},
		{`{"k":"status"}`, detailInfo{}},
		{`{"status":3}`, detailInfo{}},
		{`{"closed_by":"m2","ref":"ARCH #1"}`, detailInfo{}},
		{`not json`, detailInfo{}},
		{``, detailInfo{}},
	}
	for _, tt := range tests {
		if got := parseDetail(tt.detail); got != tt.want {
			t.Errorf("parseDetail(%s) = %+v, want %+v", tt.detail, got, tt.want)
		}
	}
}

// slowDetail is the reference decoder for parseDetail.
func slowDetail(detail string) detailInfo {
	var m map[string]any
	if json.Unmarshal([]byte(detail), &m) != nil {
		return detailInfo{}
	}
	var d detailInfo
	d.bodyHash, d.hasBodyHash = m["body_hash"].(string)
	d.status, d.hasStatus = m["status"].(string)
	d.ack, _ = m["ack_status"].(string)
	return d
}

func FuzzParseDetail(f *testing.F) {
	for _, s := range []string{`{"body_hash":"abc","status":"brokered"}`, `{"status":"a","status":"b"}`, `{"x":{"status":"y"}}`,
		`{"ack_status":"z"}`, `{"status":"\u0041"}`, `{`, `[]`, `{"status":null}`, `{"status" :"q"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := parseDetail(s), slowDetail(s)
		if strings.Count(s, `"status"`) > 1 || strings.Count(s, `"body_hash"`) > 1 || strings.Count(s, `"ack_status"`) > 1 {
			return // duplicate keys: encoding/json keeps the last, any answer is fine
		}
		if got != want {
			t.Fatalf("parseDetail(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

func TestMessageJSONUsesColumnNames(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Message{MessageID: "m", Signals: []Signal{{Kind: "TASK"}}, Refs: []string{"A #1"}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	cols := strings.Split(MessageColumns, ", ")
	if len(fields) != len(cols) || len(cols) != MessageColumnCount {
		t.Fatalf("%d JSON fields, %d columns: %s", len(fields), len(cols), b)
	}
	for _, c := range cols {
		if _, ok := fields[c]; !ok {
			t.Errorf("JSON lacks column %q: %s", c, b)
		}
	}
}
