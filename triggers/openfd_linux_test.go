package triggers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestOpenForWriting: the kernel's answer (a read lease is refused while a
// descriptor has the file open for writing) and the /proc scan agree on
// files held by this process and by another one.
func TestOpenForWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "builder.held.txt")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want bool) {
		t.Helper()
		if got := openForWriting(path); got != want {
			t.Errorf("%s: openForWriting = %v, want %v", what, got, want)
		}
		if held, known := leaseSays(path); !known || held != want {
			t.Errorf("%s: leaseSays = %v (known %v), want %v", what, held, known, want)
		}
	}
	check("closed", false)
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	check("open read-only here", false)
	_ = r.Close()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("open for writing here", true)
	_ = w.Close()
	check("closed again", false)
	// Another process holds it open for appending while it sleeps.
	cmd := exec.Command("/bin/sh", "-c", `exec 3>>"$1"; echo ready; exec sleep 30`, "sh", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	check("open for writing by another process", true)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	poll.For(t, 5*time.Second, func() error {
		return poll.Want(!openForWriting(path), "still held after the writer ended")
	})
}
