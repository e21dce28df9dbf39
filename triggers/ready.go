package triggers

import (
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// barrierTimeout bounds the wait for a marker event; on expiry the files it
// covered fall back to the settle rule.
const barrierTimeout = 2 * time.Second

// openHoldLimit bounds how long a file that has stopped changing waits for
// a writer that still holds it open: a process that keeps an idle
// descriptor (an inherited fd, a forgotten editor buffer) must not strand
// the message forever.
const openHoldLimit = 30 * time.Second

// state of one file in the directory.
type state uint8

const (
	stCandidate state = iota // Create seen, waiting for the marker event
	stSettling               // written in place, waiting for Settle of quiet
	stReady                  // may be claimed now
	stBlocked                // could not be claimed; retried at the next rescan
	stGone                   // forgotten
)

type entry struct {
	name    string
	target  string
	state   state
	seen    time.Time // first observation
	size    int64     // at the last stat
	mtime   time.Time // at the last stat
	checked time.Time // time of the last stat
	quiet   time.Time // last known activity
	wrote   bool      // a Write event arrived while a candidate
	held    bool      // found open for writing (logged once)
	ver     uint64    // generation in the ready heap
	seq     uint64    // order of first observation (event order)
}

func (s *runState) nextDeadline(now time.Time) (time.Duration, bool) {
	var due time.Time
	if s.settling > 0 {
		due = s.nextSettle
	}
	if s.marker != "" && (due.IsZero() || s.markerDue.Before(due)) {
		due = s.markerDue
	}
	if !s.rescanAt.IsZero() && (due.IsZero() || s.rescanAt.Before(due)) {
		due = s.rescanAt
	}
	if due.IsZero() {
		return 0, false
	}
	return due.Sub(now), true
}

func (s *runState) live(e *entry) bool { return s.entries[e.name] == e && e.state != stGone }

// observeCreate records a Create event: non-empty files become candidates
// for the fast path, empty ones settle.
func (s *runState) observeCreate(name, target string, now time.Time) {
	e := s.entries[name]
	fi, err := os.Lstat(filepath.Join(s.w.dir, name))
	if err == nil && !fi.Mode().IsRegular() {
		s.rejectNotRegular(name, fi.Mode().Type())
		return
	}
	if err != nil {
		if e != nil {
			s.drop(e)
		}
		return
	}
	if e == nil {
		e = s.newEntry(name, target, now)
	} else if e.state == stCandidate {
		// replaced while its marker was pending: no fast path
		e.wrote = true
		e.size, e.mtime, e.checked, e.quiet = fi.Size(), fi.ModTime(), now, now
		return
	}
	s.setState(e, stCandidate)
	e.wrote = false
	e.size, e.mtime, e.checked, e.quiet = fi.Size(), fi.ModTime(), now, now
	if fi.Size() == 0 {
		s.settle(e, now, now)
		return
	}
	s.waiting = append(s.waiting, e)
}

// observeWrite records a Write event: activity that restarts the quiet
// period, and takes a candidate off the fast path.
func (s *runState) observeWrite(name, target string, now time.Time) {
	e := s.entries[name]
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

// observeRemove records a Remove or Rename-away event: the file is forgotten
// if it is really gone (a rename onto the name may have replaced it).
func (s *runState) observeRemove(name string) {
	e := s.entries[name]
	if e == nil {
		return
	}
	if _, err := os.Lstat(filepath.Join(s.w.dir, name)); errors.Is(err, fs.ErrNotExist) {
		s.drop(e)
	}
}

// eventsLost handles an fsnotify queue overflow: Write events may be lost,
// so nothing awaiting a marker may take the fast path.
func (s *runState) eventsLost(now time.Time) {
	for _, e := range append(s.waiting, s.inFlight...) {
		if s.live(e) && e.state == stCandidate {
			s.settle(e, e.checked, now)
		}
	}
	s.waiting, s.inFlight, s.marker = nil, nil, ""
}

// observeUnknown records a file first seen through a Write event.
func (s *runState) observeUnknown(name, target string, now time.Time) {
	fi, err := os.Lstat(filepath.Join(s.w.dir, name))
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	e := s.newEntry(name, target, now)
	e.size, e.mtime, e.checked = fi.Size(), fi.ModTime(), now
	s.settle(e, now, now)
}

// newEntry registers a file seen for the first time. Its state is stGone
// until the caller sets one.
func (s *runState) newEntry(name, target string, now time.Time) *entry {
	s.entrySeq++
	e := &entry{name: name, target: target, seen: now, state: stGone, seq: s.entrySeq}
	s.entries[name] = e
	return e
}

func (s *runState) setState(e *entry, st state) {
	switch e.state {
	case stSettling:
		s.settling--
	case stBlocked:
		s.blocked--
	}
	e.state = st
	switch st {
	case stSettling:
		s.settling++
	case stBlocked:
		s.blocked++
	}
}

// settle puts e in the settle state with its last activity at quiet.
func (s *runState) settle(e *entry, quiet, now time.Time) {
	s.setState(e, stSettling)
	if quiet.After(now) {
		quiet = now
	}
	if quiet.After(e.quiet) || e.quiet.After(now) {
		e.quiet = quiet
	}
	due := e.quiet.Add(s.w.opts.Settle)
	if s.nextSettle.IsZero() || due.Before(s.nextSettle) || s.settling == 1 {
		s.nextSettle = due
	}
}

func (s *runState) makeReady(e *entry) {
	s.setState(e, stReady)
	e.ver++
	heap.Push(&s.ready, readyItem{e: e, ver: e.ver, mtime: e.mtime, seq: e.seq, name: e.name})
}

func (s *runState) drop(e *entry) {
	s.setState(e, stGone)
	if s.entries[e.name] == e {
		delete(s.entries, e.name)
	}
}

// fireMarker covers the waiting candidates with a marker file: its Create
// event comes after every event that preceded their stat.
func (s *runState) fireMarker(now time.Time) {
	if s.marker != "" || len(s.waiting) == 0 {
		return
	}
	if s.events == nil {
		for _, e := range s.waiting {
			if s.live(e) && e.state == stCandidate {
				s.settle(e, e.checked, now)
			}
		}
		s.waiting = nil
		return
	}
	s.markerSeq++
	name := syncPrefix + s.token + "-" + strconv.FormatUint(s.markerSeq, 10)
	path := filepath.Join(s.w.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.w.log.Warn("create marker file; settling instead", "err", err)
		s.w.noteError(fmt.Errorf("marker: %w", err))
		for _, e := range s.waiting {
			if s.live(e) && e.state == stCandidate {
				s.settle(e, e.checked, now)
			}
		}
		s.waiting = nil
		return
	}
	_ = f.Close()
	_ = os.Remove(path)
	s.marker = name
	s.markerDue = now.Add(barrierTimeout)
	s.inFlight, s.waiting = s.waiting, s.inFlight[:0]
}

// resolveMarker decides the candidates covered by the marker that came back.
func (s *runState) resolveMarker(now time.Time) {
	for _, e := range s.inFlight {
		if !s.live(e) || e.state != stCandidate {
			continue
		}
		// Still open for writing: its writer's Write event may not be
		// queued yet (the kernel queues it after the size changed), so the
		// marker proves nothing: settle, which waits for the close too.
		if e.wrote || s.heldOpen(e, now) {
			s.settle(e, e.quiet, now)
		} else {
			s.makeReady(e)
		}
	}
	clear(s.inFlight)
	s.inFlight = s.inFlight[:0]
	s.marker = ""
}

// promote handles marker timeouts and moves settled files to ready.
func (s *runState) promote(now time.Time) {
	if s.marker != "" && !now.Before(s.markerDue) {
		s.w.log.Warn("marker event missing; settling the files it covered")
		for _, e := range s.inFlight {
			if s.live(e) && e.state == stCandidate {
				s.settle(e, e.checked, now)
			}
		}
		s.inFlight = s.inFlight[:0]
		s.marker = ""
	}
	if s.settling == 0 || now.Before(s.nextSettle) {
		return
	}
	settle := s.w.opts.Settle
	var next time.Time
	for _, e := range s.entries {
		if e.state != stSettling {
			continue
		}
		if now.Sub(e.quiet) >= settle {
			fi, err := os.Lstat(filepath.Join(s.w.dir, e.name))
			if err != nil || !fi.Mode().IsRegular() {
				s.drop(e)
				continue
			}
			if fi.Size() != e.size || !fi.ModTime().Equal(e.mtime) {
				// changed since the last look: activity at its mtime, or now
				t := fi.ModTime()
				if t.After(now) || t.Before(e.checked) {
					t = now
				}
				e.size, e.mtime, e.checked = fi.Size(), fi.ModTime(), now
				if t.After(e.quiet) {
					e.quiet = t
				}
			} else if mt := fi.ModTime(); !mt.After(now) && now.Sub(mt) < settle && mt.After(e.quiet) {
				e.quiet = mt
			}
			e.checked = now
			if now.Sub(e.quiet) >= settle {
				if !s.heldOpen(e, now) {
					s.makeReady(e)
					continue
				}
				// still open for writing: look again after another Settle
				if due := now.Add(settle); next.IsZero() || due.Before(next) {
					next = due
				}
				continue
			}
		}
		if due := e.quiet.Add(settle); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	s.nextSettle = next
}

// heldOpen reports whether a writer still holds e's file open, so that a
// file that merely paused is not taken: readiness is judged by the file no
// longer changing and no longer being written, never by its content. After
// openHoldLimit of quiet the writer is no longer waited for.
func (s *runState) heldOpen(e *entry, now time.Time) bool {
	if now.Sub(e.quiet) >= openHoldLimit {
		return false
	}
	dir, err := filepath.EvalSymlinks(s.w.dir)
	if err != nil {
		dir = s.w.dir
	}
	if !s.w.openForWriting(filepath.Join(dir, e.name)) {
		return false
	}
	if !e.held {
		e.held = true
		s.w.log.Info("trigger file still open for writing; waiting", "name", e.name)
	}
	return true
}

// readyHeap orders ready files by mtime, then order of observation (the
// event order, which is the rename order), then name.
type readyItem struct {
	e     *entry
	ver   uint64
	mtime time.Time
	seq   uint64
	name  string
}

type readyHeap []readyItem

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	if !h[i].mtime.Equal(h[j].mtime) {
		return h[i].mtime.Before(h[j].mtime)
	}
	if h[i].seq != h[j].seq {
		return h[i].seq < h[j].seq
	}
	return h[i].name < h[j].name
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(readyItem)) }
func (h *readyHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = readyItem{}
	*h = old[:len(old)-1]
	return it
}
