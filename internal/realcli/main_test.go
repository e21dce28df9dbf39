package realcli

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	allPanesAtOnce()
	code := m.Run()
	if hmBuild.dir != "" {
		os.RemoveAll(hmBuild.dir)
	}
	os.Exit(code)
}

// allPanesAtOnce lets TestRealCLIs run its six panes at once, unless
// -parallel was given: go test's default, GOMAXPROCS, ran them two at a
// time on two cores, so the suite took as long as the six panes' cases
// one after another, halved (130 s instead of 81 s); the panes mostly wait
// for their CLIs and the model.
func allPanesAtOnce() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(len(agentCLIs)*2))
	}
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
