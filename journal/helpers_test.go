package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"hm/internal/ground/testutil"
)

// testLogger sends ledger logs to the test output.
func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelDebug) }

// openTest opens a ledger in a fresh temp dir and closes it at cleanup.
func openTest(t testing.TB, opts Options) *Ledger {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db"), opts)
}

func openAt(t testing.TB, path string, opts Options) *Ledger {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	l, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// msg builds a typical message.
func msg(id, sender, target string, seq int64, body string) *Message {
	return &Message{
		MessageID:  id,
		SessionID:  "app-session-1",
		SenderRole: sender,
		TargetRole: target,
		Channel:    "ws",
		Header:     headerOf(sender),
		Seq:        seq,
		RawBody:    fmt.Sprintf("(%s #%d): %s", headerOf(sender), seq, body),
	}
}

func headerOf(role string) string {
	switch role {
	case "architect":
		return "ARCH"
	case "builder":
		return "BUILDER"
	case "oracle":
		return "ORACLE"
	}
	return "USER"
}

func ctxT(t testing.TB) context.Context { return testutil.Context(t) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
