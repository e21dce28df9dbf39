package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"hm/internal/ground/testutil"
)

// binDir holds the binaries the tests run, each flavour built on first use
// (a run that selects no test, such as make test's Timing pass, builds
// nothing): plain in binDir, with the race detector in binDir/race.
var binDir string

type build struct {
	once sync.Once
	err  error
}

var builds struct {
	plain, race build
	// BenchmarkSixPanesMemory's floor program, with SQLite and without.
	memfloor, gofloor build
	variants          sync.Map // a variant's name → *build (hmVariant)
}

func (b *build) do(dir string, args ...string) error {
	b.once.Do(func() {
		cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, args...)...)
		if !slices.Contains(args, "-race") {
			// As make build builds them (see the Makefile): without cgo,
			// which only the race detector needs.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	return b.err
}

// raced reports whether t belongs to the fault or security suite, which run
// the hub binaries built with -race so that a data race in the real binary
// under fault or attack fails them. TestFaultSlowConsumer is an exception:
// it bounds the hub's RSS, which the race detector's shadow memory
// multiplies; so is TestFaultKill9Loop, whose 30 hub starts and kills would
// take minutes with race-built binaries (the other kill -9 tests run them).
func raced(t testing.TB) bool {
	name := t.Name()
	if strings.HasPrefix(name, "TestFaultSlowConsumer") || strings.HasPrefix(name, "TestFaultKill9Loop") {
		return false
	}
	return strings.HasPrefix(name, "TestFault") || strings.HasPrefix(name, "TestSecurity")
}

// hmBinary returns the path of the hm binary name (hm, hm-send, hm-bg) for t,
// and the environment to run it with besides cleanEnv's. For a race-built
// binary that environment sends race reports to a file that t's cleanup
// checks, failing t with the report: a hub killed with SIGKILL never gets
// to exit with the race detector's status.
func hmBinary(t testing.TB, name string) (string, []string) {
	t.Helper()
	if !raced(t) {
		if err := builds.plain.do(binDir, "hm/cmd/..."); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(binDir, name), nil
	}
	dir := filepath.Join(binDir, "race")
	if err := builds.race.do(dir, "-race", "hm/cmd/..."); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "race")
	t.Cleanup(func() {
		reports, _ := filepath.Glob(logPath + ".*")
		for _, r := range reports {
			data, _ := os.ReadFile(r)
			t.Errorf("%s (built with -race) reported a data race:\n%s", name, data)
		}
	})
	// atexit_sleep_ms=0: the race runtime otherwise sleeps a second in
	// every exit for other threads' reports (1.07 s for hm-send --help,
	// 0.12 s without), and the suite runs hundreds of these processes; a
	// race is written to log_path as it is found.
	return filepath.Join(dir, name), []string{"GORACE=log_path=" + logPath + " atexit_sleep_ms=0"}
}

// hmVariant returns the path of hm built again from the same tree into
// binDir/<variant>, with the linker setting each of xs
// ("importpath.name=value", go build -ldflags -X): another build, as an
// upgrade brings one (built without -race, as make build builds it).
func hmVariant(t testing.TB, variant string, xs ...string) string {
	t.Helper()
	b, _ := builds.variants.LoadOrStore(variant, &build{})
	dir := filepath.Join(binDir, "variant-"+variant)
	var ldflags []string
	for _, x := range xs {
		ldflags = append(ldflags, "-X", x)
	}
	if err := b.(*build).do(dir, "-ldflags", strings.Join(ldflags, " "), "hm/cmd/..."); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "hm")
}

// fakeAgentBin is the fake agent CLI hosted in panes by the fault and
// security suites (built without -race: it stands in for a foreign program).
func fakeAgentBin() string {
	path, err := testutil.BuildFakeAgent()
	if err != nil {
		panic(err)
	}
	return path
}
