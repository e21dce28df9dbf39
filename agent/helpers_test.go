package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/promptlog"
	"hm/internal/ground/testutil"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test left a goroutine behind, then removes
// the fake agent. Started as a pane keeper, the test binary is one.
func TestMain(m *testing.M) {
	if os.Getenv(keeperTestEnv) != "" { // a pane keeper (keeper_test.go)
		if err := RunKeeper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testutil.RemoveBuilds()
		os.Exit(code)
	}))
}

// fakeAgent builds agent/internal/fakeagent once per test binary.
func fakeAgent(t testing.TB) string { return testutil.FakeAgent(t) }

// testLogger sends logs to the test output.
func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelInfo) }

// startPane starts a pane and stops it at cleanup.
func startPane(t testing.TB, spec Spec) *Pane {
	t.Helper()
	return startPaneLogged(t, spec, testLogger(t))
}

// startPaneLogged is startPane with the pane's logger given.
func startPaneLogged(t testing.TB, spec Spec, log *slog.Logger) *Pane {
	t.Helper()
	if spec.Role == "" {
		spec.Role, spec.PaneID, spec.Header = "builder", "2", "BUILDER"
	}
	p, err := Start(context.Background(), spec, log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		select {
		case <-p.Done():
		case <-ctx.Done():
			t.Errorf("Done not closed after Stop")
		}
	})
	return p
}

// fakeSpec is a pane running the fake agent with fast test timings.
func fakeSpec(t testing.TB, env ...string) (Spec, string) {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "prompts.jsonl")
	base := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TERM=xterm-256color",
		"FAKEAGENT_LOG=" + logPath,
		"FAKEAGENT_ENTER_MS=20",
	}
	return Spec{
		Command:    shellQuote(fakeAgent(t)),
		Profile:    ProfileDefault,
		Timing:     Profile{Idle: 30 * time.Millisecond, EnterDelay: 70 * time.Millisecond, Verify: 700 * time.Millisecond},
		Dir:        dir,
		Env:        append(base, env...),
		PointerDir: filepath.Join(dir, "coord", "full-agent-messages"),
		LogPath:    filepath.Join(dir, "logs", "pane.log"),
		MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
		KillGrace:  time.Second,
	}, logPath
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// promptRec is one line of the fake agent's prompt log.
type promptRec = promptlog.Prompt

// readPrompts reads the fake agent's prompt log (missing file: none).
func readPrompts(t testing.TB, path string) []promptRec {
	t.Helper()
	out, err := promptlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stageLog records delivery stages per message id.
type stageLog struct {
	mu     sync.Mutex
	stages map[string][]Stage
}

func newStageLog() *stageLog { return &stageLog{stages: map[string][]Stage{}} }

// reporter returns a Report callback for id.
func (l *stageLog) reporter(id string) func(Stage) {
	return func(s Stage) {
		l.mu.Lock()
		l.stages[id] = append(l.stages[id], s)
		l.mu.Unlock()
	}
}

// get returns the stages seen for id.
func (l *stageLog) get(id string) []Stage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Stage(nil), l.stages[id]...)
}

// final reports whether id reached a final stage.
func (l *stageLog) final(id string) bool {
	for _, s := range l.get(id) {
		if s.Kind != StageTyped && s.Kind != StageRetyping && s.Kind != StageInterrupted && s.Kind != StageCleared {
			return true
		}
	}
	return false
}

// processGone reports whether pid no longer runs (gone or a zombie).
func processGone(pid int) bool {
	return !procAlive(pid)
}

// contextWithTimeout is context.WithTimeout on the background context.
func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
