package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hm/internal/ground/status"
)

// writeSome appends n messages and routes them.
func writeSome(t *testing.T, l *Ledger, prefix string, n int) {
	t.Helper()
	ctx := ctxT(t)
	for i := range n {
		id := prefix + string(rune('a'+i))
		if _, err := l.Append(ctx, msg(id, "builder", "architect", int64(i+1), "body "+id)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBadLedgerKey: garbage, a key of the wrong size, a key others may
// read, or no file at all where a key should be: Open refuses with a
// clear error and leaves the key file and the ledger as they were.
func TestBadLedgerKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		dir     bool
		want    string
	}{
		{name: "garbage", content: "not a key at all\n", mode: 0o600, want: "holds 16 characters, want 64 hex characters"},
		{name: "not hex", content: strings.Repeat("zz", 32) + "\n", mode: 0o600, want: "is not hex"},
		{name: "short", content: strings.Repeat("ab", 31), mode: 0o600, want: "holds 62 characters"},
		{name: "long", content: strings.Repeat("ab", 33), mode: 0o600, want: "holds 66 characters"},
		{name: "raw bytes", content: strings.Repeat("\x01", 32), mode: 0o600, want: "holds 32 characters"},
		{name: "empty", content: "", mode: 0o600, want: "holds 0 characters"},
		{name: "readable by others", content: strings.Repeat("ab", 32), mode: 0o644, want: "mode 0644 and others may read it"},
		{name: "group writable", content: strings.Repeat("ab", 32), mode: 0o620, want: "mode 0620"},
		{name: "directory", dir: true, want: "is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "runtime")
			path := filepath.Join(dir, "evidence-ledger.db")
			keyPath := filepath.Join(dir, KeyFileName)
			l := openAt(t, path, Options{})
			writeSome(t, l, "m", 3)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			dbBefore, _ := os.ReadFile(path)
			if err := os.Remove(keyPath); err != nil {
				t.Fatal(err)
			}
			if tt.dir {
				if err := os.Mkdir(keyPath, 0o700); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.WriteFile(keyPath, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(keyPath, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Open(context.Background(), path, Options{Logger: testLogger(t)})
			if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), keyPath) {
				t.Fatalf("Open with a bad key = %v, want ErrBadKey mentioning %q and the path", err, tt.want)
			}
			ro, err := Open(context.Background(), path, Options{Logger: testLogger(t), ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ro.Verify(ctxT(t)); !errors.Is(err, ErrBadKey) {
				t.Fatalf("Verify with a bad key = %v, want ErrBadKey", err)
			}
			ro.Close()
			// Nothing was touched: the bad file is still there, the ledger is
			// byte for byte the same, and with the right key it verifies.
			if !tt.dir {
				if got, _ := os.ReadFile(keyPath); string(got) != tt.content {
					t.Fatalf("the bad key file was changed to %q", got)
				}
			}
			if after, _ := os.ReadFile(path); string(after) != string(dbBefore) {
				t.Fatal("the ledger file changed")
			}
			if err := os.RemoveAll(keyPath); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(keyPath, good, 0o600); err != nil {
				t.Fatal(err)
			}
			l = openAt(t, path, Options{})
			if r, err := l.Verify(ctxT(t)); err != nil || !r.OK || r.Events != 6 {
				t.Fatalf("Verify with the right key = %+v, %v", r, err)
			}
		})
	}
	t.Run("wrong size in Options", func(t *testing.T) {
		_, err := Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), Options{Key: make([]byte, 16)})
		if !errors.Is(err, ErrBadKey) {
			t.Fatalf("Open with a 16-byte key = %v", err)
		}
	})
	t.Run("no key for a read-only check", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db")
		l := openAt(t, path, Options{})
		writeSome(t, l, "m", 1)
		l.Close()
		os.Remove(filepath.Join(filepath.Dir(path), KeyFileName))
		ro := openAt(t, path, Options{ReadOnly: true})
		if _, err := ro.Verify(ctxT(t)); !errors.Is(err, ErrNoKey) {
			t.Fatalf("Verify without a key = %v, want ErrNoKey", err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), KeyFileName)); !os.IsNotExist(err) {
			t.Fatal("a read-only check made a key")
		}
	})
}

// TestMissingLedgerKey: when the key file is lost, the next writer makes a
// new key and records the change in the chain; Verify then says the events
// made with the old key are unverifiable (never "ok"), and checks the rest.
func TestMissingLedgerKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "runtime")
	path := filepath.Join(dir, "evidence-ledger.db")
	keyPath := filepath.Join(dir, KeyFileName)
	l := openAt(t, path, Options{})
	writeSome(t, l, "m", 3)
	oldID, _ := l.KeyID()
	l.Close()
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	newID, _ := l.KeyID()
	if newID == oldID {
		t.Fatal("no new key was made")
	}
	if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new key file: %v %v", st, err)
	}
	writeSome(t, l, "n", 2)
	r, err := l.Verify(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "comms_events event_id 1..6: 6 events made with ledger key " + oldID + ", not the current key " + newID
	if r.OK || r.Unverifiable != 6 || !strings.HasPrefix(r.FirstBad, want) || !strings.Contains(r.FirstBad, "unverifiable") || r.Problems != 1 {
		t.Fatalf("Verify after the key was lost = %+v, want unverifiable %q", r, want)
	}
	// Tampering after the new key is still named.
	tamperScript(t, path, "UPDATE comms_journal SET sender_role = 'oracle' WHERE message_id = 'na'")
	r, _ = l.Verify(ctxT(t))
	if r.Problems < 2 || !strings.Contains(r.FirstBad, "unverifiable") {
		t.Fatalf("Verify = %+v", r)
	}
}

// TestLegacyLedgerCutOver: a ledger written with the unkeyed rule of older
// versions is cut over to the key at its first keyed open: the cut-over is
// a chained ledger_key event, the old events are checked with the old rule
// and can no longer be rewritten, and an unkeyed chain is never "ok" by
// itself.
func TestLegacyLedgerCutOver(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "runtime")
	path := filepath.Join(dir, "evidence-ledger.db")
	keyPath := filepath.Join(dir, KeyFileName)
	l := openAt(t, path, Options{})
	writeSome(t, l, "m", 3)
	l.Close()
	// What an older version left: unkeyed hashes, no key, no key id.
	rechainUnkeyed(t, path)
	tamperScript(t, path, "DELETE FROM kv WHERE key = 'ledger_key_id'")
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}

	l = openAt(t, path, Options{})
	r, err := l.Verify(ctxT(t))
	if err != nil || !r.OK || r.Legacy != 6 || r.Events != 7 {
		t.Fatalf("Verify after the cut-over = %+v, %v", r, err)
	}
	writeSome(t, l, "n", 1)
	if r, err := l.Verify(ctxT(t)); err != nil || !r.OK || r.Legacy != 6 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	// Rewriting the old part (body, its recorded hash, the unkeyed chain)
	// now breaks the keyed cut-over's prev_hash.
	tamperScript(t, path, "UPDATE comms_events SET detail_json = replace(detail_json, (SELECT body_hash FROM comms_journal WHERE message_id = 'mb'), '"+sha256Hex("forged")+"') WHERE message_id = 'mb';"+
		"UPDATE comms_journal SET raw_body = 'forged', body_hash = '"+sha256Hex("forged")+"' WHERE message_id = 'mb';")
	rechainUnkeyedTo(t, path, 6)
	r, _ = l.Verify(ctxT(t))
	if want := "comms_events event_id 7: prev_hash does not match event_id 6"; r.OK || r.FirstBad != want {
		t.Fatalf("forged legacy body: Verify = %+v, want %q", r, want)
	}
}

// TestUnkeyedHistoryRefused: someone without the key rewrites a keyed
// chain with the unkeyed rule and deletes the recorded key id, hoping the
// next open treats it as an old ledger: the key file existed, so the
// cut-over records that and Verify reports the events.
func TestUnkeyedHistoryRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
	l := openAt(t, path, Options{})
	writeSome(t, l, "m", 2)
	l.Close()
	rechainUnkeyed(t, path)
	tamperScript(t, path, "DELETE FROM kv WHERE key = 'ledger_key_id'")
	l = openAt(t, path, Options{})
	r, err := l.Verify(ctxT(t))
	want := "comms_events event_id 1 (message_id ma): hashed without the ledger key up to event_id 4 although the key existed"
	if err != nil || r.OK || !strings.HasPrefix(r.FirstBad, want) {
		t.Fatalf("Verify = %+v, %v; want %q", r, err, want)
	}
}
