package testutil

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFakeAgentArgs: a run's line counts once written whole; an args log
// the fake agent has only just created, or a line still being written, is
// no run yet (TestResumeOnRestart read the empty file and failed, make
// test, once).
func TestFakeAgentArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data string
		want       [][]string
	}{
		{"just created", "", nil},
		{"a line being written", `{"args":["--res`, nil},
		{"one run", "{\"args\":[],\"pid\":1}\n", [][]string{{}}},
		{"two runs, a third being written", "{\"args\":[],\"pid\":1}\n{\"args\":[\"--resume\",\"s\"],\"pid\":2}\n{\"args\"", [][]string{{}, {"--resume", "s"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "args.jsonl")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := FakeAgentArgs(t, path); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FakeAgentArgs = %#v, want %#v", got, tc.want)
			}
		})
	}
	if got := FakeAgentArgs(t, filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("no file: %#v, want nil", got)
	}
}
