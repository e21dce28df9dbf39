package cockpit_test

import (
	"os"
	"testing"

	"hm/internal/ground/testutil"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test left a goroutine behind, then removes
// the fake agent built for the tests that need one.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testutil.RemoveBuilds()
		os.Exit(code)
	}))
}
