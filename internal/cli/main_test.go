package cli

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test left a goroutine behind, then removes
// the fake agent built for the hook tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if fakeAgent.path != "" {
			os.RemoveAll(filepath.Dir(fakeAgent.path))
		}
		os.Exit(code)
	}))
}
