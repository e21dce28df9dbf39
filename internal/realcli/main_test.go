package realcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if hmBuild.dir != "" {
		os.RemoveAll(hmBuild.dir)
	}
	os.Exit(code)
}

// hmBuild holds the hm binaries (hm, hm-send) the suite runs, built on
// first use; their directory leads the PATH of every process the suite
// starts, so a pane's hooks and its hm-send are these.
var hmBuild struct {
	once sync.Once
	dir  string
	err  error
}

// binDir builds the hm binaries once and returns their directory.
func binDir(t testing.TB) string {
	t.Helper()
	hmBuild.once.Do(func() {
		hmBuild.dir, hmBuild.err = os.MkdirTemp("", "hm-realcli-bin-")
		if hmBuild.err != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", hmBuild.dir+"/", "hm/cmd/...").CombinedOutput(); err != nil {
			hmBuild.err = fmt.Errorf("go build hm/cmd/...: %v\n%s", err, out)
		}
	})
	if hmBuild.err != nil {
		t.Fatal(hmBuild.err)
	}
	return hmBuild.dir
}

// hmBin is the path of the built binary name.
func hmBin(t testing.TB, name string) string { return filepath.Join(binDir(t), name) }
