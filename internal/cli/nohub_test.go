package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"hm/internal/ground/testutil"
)

// TestNoHubSaysHmUp: every command that needs the hub, run where none
// listens, says that no hub is running and names `hm up`, in one line,
// and exits 1 (issue #34 item 7: hm attach printed a raw WebSocket dial
// error). The golden files under testdata/nohub are what a person sees.
func TestNoHubSaysHmUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"attach", "", []string{"attach", "architect"}},
		{"status", "", []string{"status"}},
		{"reload", "", []string{"reload"}},
		{"bg", "", []string{"bg", "list"}},
		{"comms-tail", "", []string{"comms", "tail", "-f"}},
		{"ui", "", []string{"ui"}},
		{"receipt", `{"prompt":"(ARCH #1): hi [hm:m-1]"}`, []string{"receipt"}},
		{"send-no-fallback", "", []string{"send", "--no-fallback", "builder", "hi"}},
	}
	s := session{root: t.TempDir(), port: testutil.ClosedPort(t)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(tt.args, "--root", "$ROOT", "--port", "$PORT")
			if tt.args[0] == "send" { // flags before the message's text
				args = append([]string{"send", "--root", "$ROOT", "--port", "$PORT"}, tt.args[1:]...)
			}
			got, code := s.run(t, tt.stdin, args...)
			if code != ExitFailed || !strings.Contains(got, "no hub is running on 127.0.0.1:$PORT") || !strings.Contains(got, "start it with `hm up`") {
				t.Errorf("want exit 1 and a line that says no hub runs and names hm up:\n%s", got)
			}
			checkGolden(t, filepath.Join("testdata", "nohub", tt.name+".golden"), got)
		})
	}
}
