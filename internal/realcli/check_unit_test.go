package realcli

import (
	"errors"
	"strings"
	"testing"

	"hm/internal/ground/status"
	"hm/internal/realcli/model"
)

func TestJudge(t *testing.T) {
	const id, body = "m1", "(ARCH #1): hi there"
	typed := "[AGENT MSG - reply via hm-send] (ARCH #1): hi there [hm:m1]"
	big := "(ARCH #2): " + strings.Repeat("x", 5000)
	files := map[string]string{"/f/m2.txt": big}
	read := func(p string) (string, error) {
		if s, ok := files[p]; ok {
			return s, nil
		}
		return "", errors.New("no such file")
	}
	req := func(seq int, texts ...string) model.Request {
		return model.Request{Seq: seq, Main: true, Texts: texts, Turn: texts}
	}
	// history: a main turn whose new texts hold hist (history the turn
	// before it lacked) and whose own turn is only turn.
	history := func(seq int, hist, turn string) model.Request {
		return model.Request{Seq: seq, Main: true, Texts: []string{hist, turn}, Turn: []string{turn}}
	}
	for _, tc := range []struct {
		name string
		reqs []model.Request
		id   string
		body string
		want string // "" for no error
	}{
		{"once", []model.Request{req(1, "<system-reminder>x</system-reminder>", typed)}, id, body, ""},
		{"side request ignored", []model.Request{req(1, typed), {Seq: 2, Texts: []string{typed}}}, id, body, ""},
		{"twice", []model.Request{req(1, typed), req(2, typed)}, id, body, "2 times"},
		{"resumed history after a turn without it", []model.Request{req(1, typed), req(2, "go on"), history(3, typed, "next")}, id, body, ""},
		{"resumed history and typed again", []model.Request{req(1, typed), req(2, "go on"), history(3, typed, typed)}, id, body, "want exactly once"},
		{"never", []model.Request{req(1, "other")}, id, body, "0 times"},
		{"merged", []model.Request{req(1, typed+"\n[AGENT MSG - reply via hm-send] (ARCH #2): b [hm:m2]")}, id, body, "merged"},
		{"hook context with two", []model.Request{req(1, "go on", "hm: 2 messages for you (builder) arrived while you work:\n\n"+typed+"\n\n[AGENT MSG - reply via hm-send] b [hm:m2]")}, id, body, ""},
		{"altered", []model.Request{req(1, strings.Replace(typed, "there", "the re", 1))}, id, body, "altered"},
		{"pointer", []model.Request{req(1, "[AGENT MSG - reply via hm-send] (ARCH #2): xxx … [full message (5011 bytes) in /f/m2.txt] [hm:m2]")}, "m2", big, ""},
		{"pointer file missing", []model.Request{req(1, "[AGENT MSG - reply via hm-send] (ARCH #2): xxx [full message (5011 bytes) in /f/none.txt] [hm:m2]")}, "m2", big, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := judge(sightings(tc.reqs, tc.id), tc.id, tc.body, read)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("judge: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestStageTrue(t *testing.T) {
	for _, tc := range []struct {
		stage status.Stage
		got   bool
		ok    bool
	}{
		{status.DeliveredVerified, true, true},
		{status.DeliveredVerified, false, false},
		{status.DeliveredContext, false, false},
		{status.Submitted, false, false},
		{status.Submitted, true, true},
		{status.Stuck, false, true},
		{status.Stuck, true, false},
		{status.Typed, false, true},
	} {
		if err := stageTrue(tc.stage, tc.got); (err == nil) != tc.ok {
			t.Errorf("stageTrue(%s, got=%v): %v, want ok=%v", tc.stage, tc.got, err, tc.ok)
		}
	}
}

// TestDescribe: the requests that held a copy counted twice are listed
// with the main request each was judged against.
func TestDescribe(t *testing.T) {
	req := func(seq int, main bool, texts ...string) model.Request {
		return model.Request{Seq: seq, Main: main, Texts: texts}
	}
	reqs := []model.Request{req(1, true, "hello [hm:a]"), req(2, false, "tool"), req(3, true, "short"), req(4, true, "hello [hm:a]", "again")}
	got := describe(reqs, map[int]bool{1: true, 4: true})
	for _, want := range []string{"request 1 (", "before it: request 3, 1 new texts: \"short\"", "request 4 (", "2 new texts"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe:\n%s\nwant it to hold %q", got, want)
		}
	}
	if strings.Contains(got, "request 2") {
		t.Errorf("describe lists a request that is not a main turn:\n%s", got)
	}
}
