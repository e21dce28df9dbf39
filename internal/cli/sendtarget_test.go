package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/ground/testutil"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestSendTargetCheckedOffline: with the hub down, hm-send checks the
// target against settings.json (or the default team) by the hub's own rule
// before it writes a trigger file: a typo exits 1 with the hub's "did you
// mean" line, word for word, and writes nothing (issue #34 item 6: it
// exited 0 and wrote architekt.<id>.txt); a target the hub would take is
// written as before.
func TestSendTargetCheckedOffline(t *testing.T) {
	t.Parallel()
	withReviewer := `{"panes": [{"role": "reviewer", "id": "4", "header": "REVIEW", "command": "true"}]}`
	tests := []struct {
		name     string
		settings string // "" for none: the default team
		target   string
		code     int
		stderr   string
		compare  bool // the hub says the same when up
	}{
		{"typo of a role", "", "architekt", ExitFailed, `"architekt" is not a target; did you mean architect?`, true},
		{"typo of an alias", "", "orchestrater", ExitFailed, "did you mean builder?", true},
		{"nothing near", "", "zzzzzz", ExitFailed, `invalid_target: "zzzzzz" is not a target (targets: architect, builder, oracle`, true},
		{"typo of a configured role", withReviewer, "reviewr", ExitFailed, "did you mean reviewer?", true},
		{"role", "", "architect", ExitOK, "fallback.triggered", false},
		{"alias", "", "lead", ExitOK, "fallback.triggered", false},
		{"header, any case", "", "Arch", ExitOK, "fallback.triggered", false},
		{"pane id", "", "2", ExitOK, "fallback.triggered", false},
		{"background slot", "", "builder-bg-1", ExitOK, "fallback.triggered", false},
		{"special target", "", "user", ExitOK, "fallback.triggered", false},
		{"configured role", withReviewer, "reviewer", ExitOK, "fallback.triggered", false},
		{"settings that do not parse", "{", "architekt", ExitOK, "the target is not checked: settings", false},
	}
	down := testutil.ClosedPort(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := rootWithSettings(t, tt.settings)
			code, errOut := sendAs(t, root, down, tt.target)
			files, _ := filepath.Glob(filepath.Join(layout.Layout{Root: root}.Triggers(), "*.txt"))
			if code != tt.code || !strings.Contains(errOut, tt.stderr) || (code == ExitOK) != (len(files) == 1) {
				t.Fatalf("hub down: exit %d (want %d), stderr %q (want %q), trigger files %v", code, tt.code, errOut, tt.stderr, files)
			}
			if !tt.compare {
				return
			}
			up := rootWithSettings(t, tt.settings)
			h, _ := hubtest.Start(t, up, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
			upCode, upErr := sendAs(t, up, strconv.Itoa(h.Port), tt.target)
			if upCode != code || upErr != errOut {
				t.Errorf("hub up says\n%q (exit %d)\nhub down says\n%q (exit %d)", upErr, upCode, errOut, code)
			}
		})
	}
}

// sendAs runs `hm send --root root --port port --role architect target
// hi` and returns the exit code and stderr.
func sendAs(t *testing.T, root, port, target string) (int, string) {
	code, _, errOut := cliOnHub(t, root, port)("send", "--role", "architect", target, "hi")
	return code, errOut
}

// rootWithSettings is a coordination root with settings.json holding
// settings ("" for none).
func rootWithSettings(t *testing.T, settings string) string {
	t.Helper()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if settings != "" {
		if err := os.WriteFile(lay.Settings(), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
