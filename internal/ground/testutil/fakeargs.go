package testutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// FakeAgentArgs reads a fake agent's FAKEAGENT_ARGS_LOG at path: the
// arguments each of its runs got, in order (none before the first run).
// A run writes its line whole, newline last, into a file it may have just
// created: an empty file, or a last line without its newline, is a run
// still writing, not yet counted.
func FakeAgentArgs(t testing.TB, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]string
	for len(data) > 0 {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		if !complete {
			break
		}
		data = rest
		var rec struct {
			Args []string `json:"args"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("fake agent's args log line %q: %v", line, err)
		}
		runs = append(runs, rec.Args)
	}
	return runs
}
