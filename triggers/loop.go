package triggers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// runState is owned by the single Run goroutine; it needs no locks. Its
// methods are spread by job: the event loop and dispatch here, the readiness
// state machine in ready.go, claiming and rejecting in claim.go, rescans in
// rescan.go.
type runState struct {
	w *Watcher

	// event source (nil channels when fsnotify is unavailable)
	fw     *fsnotify.Watcher
	events <-chan fsnotify.Event
	errs   <-chan error

	// readiness (ready.go)
	entries    map[string]*entry
	ready      readyHeap
	waiting    []*entry // stat'ed candidates not yet covered by a marker
	inFlight   []*entry // candidates covered by the current marker
	marker     string   // name of the in-flight marker file, "" if none
	markerDue  time.Time
	markerSeq  uint64
	entrySeq   uint64
	token      string
	settling   int       // entries in stSettling
	blocked    int       // entries in stBlocked (retried by a rescan)
	nextSettle time.Time // earliest time a settling entry may be ready

	// claiming (claim.go) and rescans (rescan.go)
	claimedQ  []claimedItem
	paused    bool // a transient sink error: wait for the next rescan
	rescanDue bool
	// rescanAt is when the next fallback rescan is due (zero: none); one
	// is scheduled only while events cannot tell the watcher everything
	// (see blind).
	rescanAt time.Time
	// watching: fsnotify watches the directory. badWaiting: a misnamed
	// .txt file was seen that a later rescan refuses once it is quiet.
	// scanFailed: the last rescan could not read the directories.
	watching, badWaiting, scanFailed bool
	ignored                          map[string]bool
	doneIDs                          map[string]struct{} // derived ids committed and deleted in this run
}

// loop is the event loop: it feeds fsnotify events and errors to the
// readiness state machine, runs rescans when due, and processes one ready
// file at a time until ctx is done. A rescan runs after a watcher error or
// overflow, and every Rescan only while events alone cannot see everything
// (blind): an idle watcher that is told of every change runs no timer. Its
// timer only wakes it; every decision reads the Watcher's clock.
func (s *runState) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		s.drain()
		now := s.w.now()
		if !s.rescanAt.IsZero() && !now.Before(s.rescanAt) {
			s.rescanDue = true
		}
		if s.rescanDue {
			s.rescanAt = time.Time{}
			s.rescan(now)
		}
		s.fireMarker(now)
		s.promote(now)
		if s.step(ctx) {
			continue
		}
		s.scheduleRescan(now)
		if d, ok := s.nextDeadline(s.w.now()); ok {
			timer.Reset(max(d, time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-s.events:
			s.takeEvent(ev, ok)
		case err, ok := <-s.errs:
			s.takeError(err, ok)
		case err := <-s.w.injectErr:
			s.handleError(err)
		case <-timer.C:
		}
		timer.Stop()
	}
}

// blind reports whether events alone may miss a file that is there or
// was left to retry: fsnotify is unavailable or not watching the
// directory, a sink error paused processing, a file could not be claimed,
// a misnamed file waits to be refused, or the last scan failed.
func (s *runState) blind() bool {
	return s.events == nil || !s.watching || s.paused || s.blocked > 0 || s.badWaiting || s.scanFailed
}

// scheduleRescan sets rescanAt to Rescan from now while the watcher is
// blind, and clears it otherwise.
func (s *runState) scheduleRescan(now time.Time) {
	switch {
	case !s.blind():
		s.rescanAt = time.Time{}
	case s.rescanAt.IsZero():
		s.rescanAt = now.Add(s.w.opts.Rescan)
	}
}

// drain handles what is already queued without blocking.
func (s *runState) drain() {
	for range 4096 {
		select {
		case ev, ok := <-s.events:
			if !s.takeEvent(ev, ok) {
				return
			}
		case err, ok := <-s.errs:
			if !s.takeError(err, ok) {
				return
			}
		case err := <-s.w.injectErr:
			s.handleError(err)
		default:
			return
		}
	}
}

// takeEvent handles one receive from the fsnotify event channel: an event,
// or (ok false) the channel's close, after which it is no longer read. It
// reports ok.
func (s *runState) takeEvent(ev fsnotify.Event, ok bool) bool {
	if !ok {
		s.events = nil
		return false
	}
	s.handleEvent(ev)
	return true
}

// takeError is takeEvent for the fsnotify error channel.
func (s *runState) takeError(err error, ok bool) bool {
	if !ok {
		s.errs = nil
		return false
	}
	s.handleError(err)
	return true
}

// handleError handles an fsnotify error: an overflow means lost events (no
// fast path for what awaits a marker, and a rescan); anything else is noted
// and also answered with a rescan.
func (s *runState) handleError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		s.w.overflows.Add(1)
		s.w.log.Warn("fsnotify queue overflow, rescanning")
		s.eventsLost(s.w.now())
		s.rescanDue = true
		return
	}
	s.w.log.Warn("fsnotify error", "err", err)
	s.w.noteError(fmt.Errorf("fsnotify: %w", err))
	s.rescanDue = true
}

// handleEvent dispatches one fsnotify event: the directory itself going
// away, the return of the pending marker, or activity on a trigger file.
func (s *runState) handleEvent(ev fsnotify.Event) {
	name, ok := strings.CutPrefix(ev.Name, s.w.dir+string(filepath.Separator))
	if !ok || name == "" || strings.ContainsRune(name, filepath.Separator) {
		if filepath.Clean(ev.Name) == s.w.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
			s.w.log.Warn("trigger dir removed or moved; recreating it")
			s.watching = false
			s.rescanDue = true
		}
		return
	}
	if strings.HasPrefix(name, syncPrefix) {
		if ev.Has(fsnotify.Create) && name == s.marker {
			s.resolveMarker(s.w.now())
		}
		return
	}
	target, valid := ParseName(name)
	if !valid {
		if badTxtName(name) && ev.Has(fsnotify.Create|fsnotify.Write|fsnotify.Rename) {
			s.badWaiting = true // refused by a rescan once quiet
		}
		return
	}
	now := s.w.now()
	if ev.Has(fsnotify.Create) {
		s.observeCreate(name, target, now)
	}
	if ev.Has(fsnotify.Write) {
		s.observeWrite(name, target, now)
	}
	if ev.Has(fsnotify.Remove|fsnotify.Rename) && !ev.Has(fsnotify.Create) {
		s.observeRemove(name)
	}
}
