package cmdline

import (
	"net"
	"os"
	"strconv"
	"testing"

	"hm/internal/ground/layout"
	"hm/internal/ground/testutil"
)

// listener listens on a loopback port until the test ends and returns it.
func listener(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestDiscoverPortOfAdoptedPane: a pane's program keeps $HM_PORT of the
// hub that started it; after a kill -9 the hub that adopted it listens on
// another port (hm up --port 0), and the program's hooks and hm-send must
// find it through hub.json (TestRealCLIs/<cli>/hooks/restart after
// hubkill: no hook reached the new hub, so it never learnt the CLI's
// session and restarted it blank instead of resuming it).
func TestDiscoverPortOfAdoptedPane(t *testing.T) {
	t.Parallel()
	live, other := listener(t), listener(t)
	dead, err := strconv.Atoi(testutil.ClosedPort(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		hubJSON int // 0: none
		want    int
	}{
		{"$HM_PORT's hub gone, hub.json names the new one", map[string]string{"HM_PORT": itoa(dead)}, live, live},
		{"$HM_SEND_PORT's hub gone, hub.json names the new one", map[string]string{"HM_SEND_PORT": itoa(dead)}, live, live},
		{"$HM_PORT's hub listens: it is kept", map[string]string{"HM_PORT": itoa(other)}, live, other},
		{"$HM_PORT's hub gone, no hub.json", map[string]string{"HM_PORT": itoa(dead)}, 0, dead},
		{"$HM_PORT's hub gone, hub.json names the same port", map[string]string{"HM_PORT": itoa(dead)}, dead, dead},
		{"no variable: hub.json", nil, live, live},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lay := layout.Layout{Root: t.TempDir()}
			if tc.hubJSON > 0 {
				if err := os.MkdirAll(lay.Runtime(), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := lay.WriteHubInfo(layout.HubInfo{PID: 1, Port: tc.hubJSON}); err != nil {
					t.Fatal(err)
				}
			}
			env := Env{Getenv: func(k string) string { return tc.env[k] }}
			h, err := Discover(env, lay.Root, 0, "builder")
			if err != nil || h.Port != tc.want {
				t.Errorf("Discover: port %d, %v; want %d", h.Port, err, tc.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
