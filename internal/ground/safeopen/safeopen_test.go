package safeopen

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(file)
	if err != nil {
		t.Fatalf("Open(a regular file) = %v", err)
	}
	f.Close()
	if f, err := Open(link); err == nil || !errors.Is(err, syscall.ELOOP) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Open(a symbolic link) = %v, want ELOOP", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := Open(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case <-done: // opened or refused, at once; the caller's Stat judges it
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
}
