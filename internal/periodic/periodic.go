// Package periodic runs a function on a ticker until its context ends: the
// one loop the hub's handoff writer and the waiting watch share.
package periodic

import (
	"context"
	"time"
)

// Run calls fn every d until ctx ends. The first call is after d.
func Run(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
