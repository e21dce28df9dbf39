package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// fakeAgentPkg is the fake agent CLI that tests host in panes.
const fakeAgentPkg = "hm/agent/internal/fakeagent"

// fake is the fake agent, built once per test binary into its own
// temporary directory.
var fake struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// BuildFakeAgent builds the fake agent CLI (agent/internal/fakeagent) on
// first use and returns its path; later calls return the same build (or
// error). The test binary's TestMain removes it with RemoveBuilds.
func BuildFakeAgent() (string, error) {
	fake.once.Do(func() {
		fake.dir, fake.err = os.MkdirTemp("", "hm-fakeagent-")
		if fake.err != nil {
			return
		}
		fake.path = filepath.Join(fake.dir, "fakeagent")
		if out, err := exec.Command("go", "build", "-o", fake.path, fakeAgentPkg).CombinedOutput(); err != nil {
			fake.err = fmt.Errorf("build %s: %w\n%s", fakeAgentPkg, err, out)
		}
	})
	return fake.path, fake.err
}

// FakeAgent is BuildFakeAgent for a test: a failed build fails t.
func FakeAgent(t testing.TB) string {
	t.Helper()
	path, err := BuildFakeAgent()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// RemoveBuilds deletes what BuildFakeAgent built; call it from TestMain
// after the tests ran.
func RemoveBuilds() {
	if fake.dir != "" {
		os.RemoveAll(fake.dir)
	}
}
