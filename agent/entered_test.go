package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestEnteredLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "panes", "architect.entered")
	if ids, err := ReadEntered(path); err != nil || ids != nil {
		t.Fatalf("missing file: %v %v", ids, err)
	}
	l, err := openEnteredLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"hm-1", "bad\nid", "", "hm-2"} {
		if err := l.add(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("entered log mode: %v %v", st, err)
	}
	// A record cut by a crash (no newline) is dropped.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hm-3-cut")
	f.Close()
	ids, err := ReadEntered(path)
	if err != nil || !reflect.DeepEqual(ids, []string{"hm-1", "hm-2"}) {
		t.Fatalf("ReadEntered = %q, %v; want hm-1, hm-2", ids, err)
	}
	var none *enteredLog
	if err := none.add("x"); err != nil || none.close() != nil {
		t.Fatal("a pane without an entered log records nothing")
	}
}
