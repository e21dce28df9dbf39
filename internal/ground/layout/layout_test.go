package layout

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFindRoot(t *testing.T) {
	base := t.TempDir()
	marked := filepath.Join(base, "repo")
	deep := filepath.Join(marked, "a", "b")
	if err := os.MkdirAll(filepath.Join(marked, Dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	t.Chdir(deep)
	tests := []struct {
		name, flag string
		env        map[string]string
		want       string
	}{
		{"flag wins", base, map[string]string{"SQUIDRUN_ROOT": marked}, base},
		{"env next", "", map[string]string{"SQUIDRUN_ROOT": base}, base},
		{"nearest .squidrun ancestor", "", nil, marked},
	}
	for _, tt := range tests {
		got, err := FindRoot(tt.flag, env(tt.env))
		if err != nil || got.Root != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got.Root, err, tt.want)
		}
	}
	plain := t.TempDir()
	t.Chdir(plain)
	if got, _ := FindRoot("", env(nil)); got.Root != plain {
		t.Errorf("no marker: %q, want the working directory %q", got.Root, plain)
	}
}

func TestEnsureStatusTokenModes(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	old := syscallUmask(0)
	defer syscallUmask(old)
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.State(), l.Triggers(), l.Runtime(), l.Handoffs(), l.FullMessages()} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, st.Mode(), err)
		}
	}
	tok, err := l.EnsureToken()
	if err != nil || len(tok) != 64 {
		t.Fatalf("token %q %v", tok, err)
	}
	if again, _ := l.EnsureToken(); again != tok {
		t.Error("token changed on the second call")
	}
	if st, _ := os.Stat(l.Token()); st.Mode().Perm() != 0o600 {
		t.Errorf("token mode %o", st.Mode().Perm())
	}
	for want := 1; want <= 3; want++ {
		st, err := l.NextSession("test", time.Now(), 0)
		if err != nil || st.Session != want {
			t.Fatalf("session %d: %+v %v", want, st, err)
		}
	}
	if st, _ := os.Stat(l.AppStatus()); st.Mode().Perm() != 0o600 {
		t.Errorf("app-status mode %o", st.Mode().Perm())
	}
	if err := os.WriteFile(l.AppStatus(), []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.NextSession("test", time.Now(), 0); err == nil {
		t.Error("a corrupt app-status.json was silently reset")
	}
	if err := l.WriteHubInfo(HubInfo{PID: 1, Port: 9, URL: "ws://127.0.0.1:9/", Session: 3}); err != nil {
		t.Fatal(err)
	}
	if h, err := l.ReadHubInfo(); err != nil || h.Port != 9 || h.Session != 3 {
		t.Fatalf("hub.json %+v %v", h, err)
	}
	if left, _ := filepath.Glob(filepath.Join(l.Runtime(), ".*.tmp")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}
