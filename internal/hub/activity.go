package hub

import (
	"context"
	"log/slog"
	"sync/atomic"

	"hm/agent"
	"hm/internal/ground/periodic"
	"hm/journal"
)

// activity is what wakes the hub's watchers, so that an idle hub runs no
// timer (#36): the handoff writer, the waiting-for-a-person watch and the
// terminal's status line each run while what they look at changes, never
// on a clock while nothing happens.
type activity struct {
	// commits rings when the ledger commits (the handoff writer).
	commits periodic.Bell
	// changed rings when what the status line or the waiting watch looks
	// at may have changed: a commit, a pane's output or hook report, a
	// pane added, a warning logged.
	changed periodic.Bell
	// looks counts the watchers' looks (tests).
	looks struct{ handoff, waiting, terminal atomic.Int64 }
}

// followLedger rings commits and changed when the ledger commits, until
// ctx ends: once for all the events waiting, so that it keeps up with a
// burst (a subscriber that falls behind makes the ledger drop and warn).
func (a *activity) followLedger(ctx context.Context, l *journal.Ledger) {
	events, cancel := l.Subscribe(1024)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
		}
	drain:
		for {
			select {
			case _, ok := <-events:
				if !ok {
					return
				}
			default:
				break drain
			}
		}
		a.commits.Ring()
		a.changed.Ring()
	}
}

// followPane rings changed for each chunk of p's output until p stops or
// unfollow is called (the returned function). The forwarder only rings, so
// it does not fall behind the pane's subscriber buffer.
func (a *activity) followPane(p *agent.Pane) (unfollow func()) {
	chunks, cancel := p.Subscribe()
	go func() {
		for range chunks {
			a.changed.Ring()
		}
	}()
	a.changed.Ring()
	return cancel
}

// ringOnWarn is a log handler that rings changed after each warning or
// error it passes on: the status line counts them.
type ringOnWarn struct {
	slog.Handler
	bell *periodic.Bell
}

func (r ringOnWarn) Handle(ctx context.Context, rec slog.Record) error {
	err := r.Handler.Handle(ctx, rec)
	if rec.Level >= slog.LevelWarn {
		r.bell.Ring()
	}
	return err
}

func (r ringOnWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ringOnWarn{Handler: r.Handler.WithAttrs(attrs), bell: r.bell}
}

func (r ringOnWarn) WithGroup(name string) slog.Handler {
	return ringOnWarn{Handler: r.Handler.WithGroup(name), bell: r.bell}
}
