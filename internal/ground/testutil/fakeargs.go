package testutil

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// FakeAgentArgs reads a fake agent's FAKEAGENT_ARGS_LOG at path: the
// arguments each of its runs got, in order (none before the first run).
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
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Args []string `json:"args"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("fake agent's args log line %q: %v", line, err)
		}
		runs = append(runs, rec.Args)
	}
	return runs
}
