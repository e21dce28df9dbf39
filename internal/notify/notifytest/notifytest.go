// Package notifytest is a fake desktop notifier for tests: a shell script
// that appends its arguments to a file, run as settings.json
// "notifications": {"command"} (notify.DesktopCommand).
package notifytest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Command writes the fake notifier into dir and returns its command line
// and a function that reads what it was called with: one "title\tbody"
// line per call, in call order.
func Command(t testing.TB, dir string) (command string, calls func() []string) {
	t.Helper()
	log := filepath.Join(dir, "notified.log")
	script := filepath.Join(dir, "fake-notifier.sh")
	body := "#!/bin/sh\nprintf '%s\\t%s\\n' \"$1\" \"$2\" >> '" + log + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script, func() []string {
		data, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Errorf("read the fake notifier's log: %v", err)
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
}
