package triggers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// runState is owned by the single Run goroutine; it needs no locks.
type runState struct {
	w      *Watcher
	fw     *fsnotify.Watcher
	events <-chan fsnotify.Event
	errs   <-chan error

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
	nextSettle time.Time // earliest time a settling entry may be ready
	claimedQ   []claimedItem
	paused     bool // a transient sink error: wait for the next rescan
	rescanDue  bool
	ignored    map[string]bool
}

func (s *runState) loop(ctx context.Context) {
	ticker := time.NewTicker(s.w.opts.Rescan)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		s.drain(ticker.C)
		now := time.Now()
		if s.rescanDue {
			s.rescan(now)
		}
		s.fireMarker(now)
		s.promote(now)
		if s.step(ctx) {
			continue
		}
		if d, ok := s.nextDeadline(time.Now()); ok {
			timer.Reset(max(d, time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				continue
			}
			s.handleEvent(ev)
		case err, ok := <-s.errs:
			if !ok {
				s.errs = nil
				continue
			}
			s.handleError(err)
		case err := <-s.w.injectErr:
			s.handleError(err)
		case <-ticker.C:
			s.rescanDue = true
		case <-timer.C:
		}
		timer.Stop()
	}
}

// drain handles what is already queued without blocking.
func (s *runState) drain(tick <-chan time.Time) {
	for range 4096 {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				return
			}
			s.handleEvent(ev)
		case err, ok := <-s.errs:
			if !ok {
				s.errs = nil
				return
			}
			s.handleError(err)
		case err := <-s.w.injectErr:
			s.handleError(err)
		case <-tick:
			s.rescanDue = true
		default:
			return
		}
	}
}

func (s *runState) handleError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		s.w.overflows.Add(1)
		s.w.log.Warn("fsnotify queue overflow, rescanning")
		// Write events may be lost: nothing awaiting a marker may take the
		// fast path.
		now := time.Now()
		for _, e := range append(s.waiting, s.inFlight...) {
			if s.live(e) && e.state == stCandidate {
				s.settle(e, e.checked, now)
			}
		}
		s.waiting, s.inFlight, s.marker = nil, nil, ""
		s.rescanDue = true
		return
	}
	s.w.log.Warn("fsnotify error", "err", err)
	s.w.noteError(fmt.Errorf("fsnotify: %w", err))
	s.rescanDue = true
}

func (s *runState) handleEvent(ev fsnotify.Event) {
	name, ok := strings.CutPrefix(ev.Name, s.w.dir+string(filepath.Separator))
	if !ok || name == "" || strings.ContainsRune(name, filepath.Separator) {
		if filepath.Clean(ev.Name) == s.w.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
			s.w.log.Warn("trigger dir removed or moved; recreating it")
			s.rescanDue = true
		}
		return
	}
	if strings.HasPrefix(name, syncPrefix) {
		if ev.Has(fsnotify.Create) && name == s.marker {
			s.resolveMarker(time.Now())
		}
		return
	}
	target, valid := ParseName(name)
	if !valid {
		return
	}
	now := time.Now()
	e := s.entries[name]
	if ev.Has(fsnotify.Create) {
		s.observeCreate(name, target, e, now)
		e = s.entries[name]
	}
	if ev.Has(fsnotify.Write) {
		switch {
		case e == nil:
			s.observeUnknown(name, target, now)
		case e.state == stCandidate:
			e.wrote = true
			e.quiet = now
		case e.state == stSettling:
			e.quiet = now
		default: // ready or blocked: written after it looked complete
			s.settle(e, now, now)
		}
	}
	if e != nil && ev.Has(fsnotify.Remove|fsnotify.Rename) && !ev.Has(fsnotify.Create) {
		if _, err := os.Lstat(filepath.Join(s.w.dir, name)); errors.Is(err, fs.ErrNotExist) {
			s.drop(e)
		}
	}
}
