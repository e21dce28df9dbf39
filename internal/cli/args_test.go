package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMainUsage(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := MainContext(t.Context(), nil, env); code != ExitUsage || !strings.Contains(errb.String(), "commands:") {
		t.Fatalf("no args: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := MainContext(t.Context(), []string{"fly"}, env); code != ExitUsage || !strings.Contains(errb.String(), `unknown command "fly"`) {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
	if code := MainContext(t.Context(), []string{"send", "--help"}, env); code != ExitOK || !strings.Contains(out.String(), "usage: hm-send") {
		t.Fatalf("send --help: %d %q", code, out.String())
	}
}

func TestSendUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"send", "--help"}, ExitOK, "usage: hm-send", ""},
		{[]string{"send", "-h"}, ExitOK, "usage: hm-send", ""},
		{[]string{"send", "architect", "please", "run", "make", "--help"}, ExitUsage, "", "quote the message"},
		{[]string{"send", "architect", "hello", "--jsno"}, ExitUsage, "", "unknown flag --jsno"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			code := MainContext(t.Context(), tt.args, env)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
}

// TestSendFileBounded: --file on an endless source reads at most the limit
// plus one byte and refuses, instead of reading forever.
func TestSendFileBounded(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatalf("/dev/zero is needed: %v", err)
	}
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- MainContext(t.Context(), []string{"send", "--root", t.TempDir(), "--no-fallback", "architect", "--file", "/dev/zero"}, env)
	}()
	select {
	case code := <-done:
		if code != ExitFailed || !strings.Contains(errb.String(), "too_large") {
			t.Fatalf("exit %d, stderr %q; want 1 and too_large", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hm send --file /dev/zero did not stop reading")
	}
}

func TestTokenRotate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := MainContext(t.Context(), []string{"token", "rotate", "--root", root}, env); code != ExitOK || !strings.Contains(out.String(), "wrote a new operator token") {
		t.Fatalf("hm token rotate: exit %d, %q %q", code, out.String(), errb.String())
	}
	if code := MainContext(t.Context(), []string{"token", "--root", root}, env); code != ExitUsage {
		t.Fatalf("hm token without rotate: exit %d", code)
	}
}

// TestRunAsLink: one binary is hm, and hm-send or hm-bg when started
// through a link of that name (make build's LINKS).
func TestRunAsLink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv   []string
		stdout string
	}{
		{[]string{"hm", "--version"}, "hm "},
		{[]string{"/usr/local/bin/hm-send", "--version"}, "hm-send "},
		{[]string{"hm-send", "--help"}, "usage: hm-send <target>"},
		{[]string{"bin/hm-bg", "--version"}, "hm-bg "},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			if code := Run(tt.argv, env); code != ExitOK || !strings.HasPrefix(out.String(), tt.stdout) {
				t.Fatalf("exit %d, stdout %q (want it to start %q), stderr %q", code, out.String(), tt.stdout, errb.String())
			}
		})
	}
}
