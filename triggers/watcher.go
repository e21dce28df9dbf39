package triggers

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"hm/internal/atomicfile"
)

// Defaults for Options.
const (
	DefaultRescan = 2 * time.Second
	DefaultSettle = 300 * time.Millisecond
)

// Names inside the trigger directory.
const (
	ClaimedDir  = ".claimed" // private: files being processed or awaiting retry
	RejectedDir = "rejected" // refused files and their .reason files
	syncPrefix  = ".hm-sync-"
)

// barrierTimeout bounds the wait for a marker event; on expiry the files it
// covered fall back to the settle rule.
const barrierTimeout = 2 * time.Second

// ErrRunning is returned by Run when the Watcher is already running.
var ErrRunning = errors.New("trigger watcher already running")

// File is one claimed, decoded trigger file.
type File struct {
	Name      string    // original file name, e.g. "architect.hm-123-abc.txt"
	Target    string    // target part of the name, lower-cased: "architect", "all", "others-builder", ...
	MessageID string    // from the "[HM-MESSAGE-ID:<id>]" first line, else DerivedID(Name, Content)
	Content   string    // decoded, cleaned message text (header included as written)
	ClaimedAt time.Time // when the watcher claimed it
	Seen      time.Time // when the watcher first observed it
}

// Sink commits a trigger file (the hub routes it and records it in the
// ledger). An error wrapping ErrReject (see Reject) moves the file to
// rejected/ with a reason file; any other error is transient: the file is kept
// and retried at the next rescan. The sink must return when ctx is done.
type Sink func(ctx context.Context, f File) error

// Options tune a Watcher. Zero values select the defaults.
type Options struct {
	Rescan   time.Duration // full rescan period; default 2s
	Settle   time.Duration // quiet period for files written in place; default 300ms
	MaxBytes int64         // largest accepted file; default 256 KiB
	Logger   *slog.Logger  // default: discard
}

// Stats are the watcher's counters.
type Stats struct {
	Processed   uint64    // files committed by the sink and deleted
	Rejected    uint64    // files moved to rejected/
	Retried     uint64    // transient failures (file kept for a later retry)
	Rescans     uint64    // full directory scans
	Overflows   uint64    // fsnotify queue overflows
	LastError   string    // the last transient or file-system error, "" if none
	LastErrorAt time.Time // when LastError happened
}

// Watcher watches one trigger directory and feeds its files to a Sink.
type Watcher struct {
	dir      string
	claimed  string
	rejected string
	sink     Sink
	opts     Options
	log      *slog.Logger

	running atomic.Bool

	processed atomic.Uint64
	rejectedN atomic.Uint64
	retried   atomic.Uint64
	rescans   atomic.Uint64
	overflows atomic.Uint64
	errMu     sync.Mutex
	lastErr   string
	lastErrAt time.Time

	// test hooks
	noNotify  bool       // poll only, as when fsnotify is unavailable
	injectErr chan error // extra fsnotify errors (e.g. ErrEventOverflow)
}

// NewWatcher returns a Watcher for dir that commits files through sink.
func NewWatcher(dir string, sink Sink, opts Options) *Watcher {
	if opts.Rescan <= 0 {
		opts.Rescan = DefaultRescan
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	dir = filepath.Clean(dir)
	return &Watcher{
		dir:      dir,
		claimed:  filepath.Join(dir, ClaimedDir),
		rejected: filepath.Join(dir, RejectedDir),
		sink:     sink,
		opts:     opts,
		log:      opts.Logger.With("component", "triggers", "dir", dir),
	}
}

// Dir returns the watched directory.
func (w *Watcher) Dir() string { return w.dir }

// Stats returns a snapshot of the counters.
func (w *Watcher) Stats() Stats {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return Stats{
		Processed:   w.processed.Load(),
		Rejected:    w.rejectedN.Load(),
		Retried:     w.retried.Load(),
		Rescans:     w.rescans.Load(),
		Overflows:   w.overflows.Load(),
		LastError:   w.lastErr,
		LastErrorAt: w.lastErrAt,
	}
}

func (w *Watcher) noteError(err error) {
	w.errMu.Lock()
	w.lastErr = err.Error()
	w.lastErrAt = time.Now()
	w.errMu.Unlock()
}

func (w *Watcher) ensureDirs() error {
	for _, d := range []string{w.dir, w.claimed, w.rejected} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("trigger dir: %w", err)
		}
	}
	return nil
}

// Run creates the directory (0700) with its rejected/ and .claimed/
// subdirectories, processes leftovers in .claimed/, drains the files already
// present, then follows fsnotify events with a full rescan every Rescan and on
// queue overflow. If fsnotify is unavailable it keeps working by rescans
// alone. Run returns nil when ctx is done, after stopping every goroutine it
// started; it returns an error only when the directories cannot be created.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer w.running.Store(false)
	if err := w.ensureDirs(); err != nil {
		return err
	}
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	s := &runState{
		w:       w,
		entries: map[string]*entry{},
		ignored: map[string]bool{},
		token:   hex.EncodeToString(tok[:]),
	}
	if !w.noNotify {
		fw, err := fsnotify.NewBufferedWatcher(4096)
		if err == nil {
			if err = fw.Add(w.dir); err != nil {
				_ = fw.Close()
			}
		}
		if err != nil {
			w.log.Warn("fsnotify unavailable, polling only", "rescan", w.opts.Rescan, "err", err)
			w.noteError(fmt.Errorf("fsnotify: %w", err))
		} else {
			s.fw = fw
			s.events = fw.Events
			s.errs = fw.Errors
			defer func() { _ = fw.Close() }() // stops fsnotify's reader goroutine
		}
	}
	s.removeStaleMarkers()
	s.rescan(time.Now())
	w.log.Debug("trigger watcher started", "claimed", len(s.claimedQ), "files", len(s.entries))
	s.loop(ctx)
	return nil
}

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
	ver     uint64    // generation in the ready heap
	seq     uint64    // order of first observation (event order)
}

type claimedItem struct {
	name  string
	mtime time.Time
}

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

func (s *runState) nextDeadline(now time.Time) (time.Duration, bool) {
	var due time.Time
	if s.settling > 0 {
		due = s.nextSettle
	}
	if s.marker != "" && (due.IsZero() || s.markerDue.Before(due)) {
		due = s.markerDue
	}
	if due.IsZero() {
		return 0, false
	}
	return due.Sub(now), true
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

func (s *runState) live(e *entry) bool { return s.entries[e.name] == e && e.state != stGone }

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

// observeCreate records a new file: non-empty ones become candidates for the
// fast path, empty ones settle.
func (s *runState) observeCreate(name, target string, e *entry, now time.Time) {
	fi, err := os.Lstat(filepath.Join(s.w.dir, name))
	if err != nil || !fi.Mode().IsRegular() {
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
	if e.state == stSettling {
		s.settling--
	}
	e.state = st
	if st == stSettling {
		s.settling++
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
		if e.wrote {
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
				s.makeReady(e)
				continue
			}
		}
		if due := e.quiet.Add(settle); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	s.nextSettle = next
}

// step processes one file. It reports whether it did any work.
func (s *runState) step(ctx context.Context) bool {
	if s.paused {
		return false
	}
	if len(s.claimedQ) > 0 {
		c := s.claimedQ[0]
		s.claimedQ = s.claimedQ[1:]
		now := time.Now()
		target, _ := ParseName(c.name)
		s.process(ctx, c.name, target, now, now)
		return true
	}
	for s.ready.Len() > 0 {
		it := heap.Pop(&s.ready).(readyItem)
		e := it.e
		if !s.live(e) || e.state != stReady || e.ver != it.ver {
			continue
		}
		s.claim(ctx, e)
		return true
	}
	return false
}

// claim renames the file into .claimed/ and processes it.
func (s *runState) claim(ctx context.Context, e *entry) {
	src := filepath.Join(s.w.dir, e.name)
	dst := filepath.Join(s.w.claimed, e.name)
	if _, err := os.Lstat(dst); err == nil {
		// an earlier file of that name awaits a retry: keep order
		s.setState(e, stBlocked)
		return
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.drop(e)
			return
		}
		s.fsError("claim", e.name, err)
		s.setState(e, stBlocked)
		return
	}
	s.drop(e)
	s.process(ctx, e.name, e.target, e.seen, time.Now())
}

func (s *runState) fsError(op, name string, err error) {
	s.w.log.Error("trigger file", "op", op, "name", name, "err", err)
	s.w.noteError(fmt.Errorf("%s %s: %w", op, name, err))
}

// process reads a claimed file, hands it to the sink and finishes it.
func (s *runState) process(ctx context.Context, name, target string, seen, claimedAt time.Time) {
	path := filepath.Join(s.w.claimed, name)
	data, rerr := s.read(path)
	if rerr != nil {
		if CodeOf(rerr) != "" {
			s.reject(path, name, rerr)
			return
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			s.fsError("read", name, rerr)
		}
		return
	}
	id, content, err := Decode(data)
	if err != nil {
		s.reject(path, name, err)
		return
	}
	if id == "" {
		id = DerivedID(name, content)
	}
	f := File{Name: name, Target: target, MessageID: id, Content: content, ClaimedAt: claimedAt, Seen: seen}
	err = s.w.sink(ctx, f)
	switch {
	case err == nil:
		s.w.processed.Add(1)
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			s.fsError("remove", name, rmErr)
		}
		s.w.log.Debug("trigger committed", "name", name, "id", id, "target", target)
	case errors.Is(err, ErrReject):
		s.reject(path, name, err)
	default:
		s.paused = true
		if ctx.Err() != nil {
			return // shutting down; the file waits in .claimed/
		}
		s.w.retried.Add(1)
		s.w.noteError(fmt.Errorf("sink %s: %w", name, err))
		s.w.log.Warn("trigger sink failed, retrying at next rescan", "name", name, "id", id, "err", err)
	}
}

// read returns the file's bytes, or a RejectError for files that are too
// large or not regular.
func (s *runState) read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, Reject(CodeNotRegular, "a symbolic link, not a regular file")
		}
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, Reject(CodeNotRegular, "not a regular file (%s)", fi.Mode().Type())
	}
	limit := s.w.opts.MaxBytes
	if fi.Size() > limit {
		return nil, Reject(CodeTooLarge, "the file is %d bytes, the limit is %d", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, Reject(CodeTooLarge, "the file is over the %d-byte limit", limit)
	}
	return data, nil
}

// reject moves a claimed file to rejected/ beside a reason file, never
// overwriting an earlier rejected file.
func (s *runState) reject(path, name string, cause error) {
	code := CodeOf(cause)
	if code == "" {
		code = CodeRejected
	}
	reason := strings.Join(strings.Fields(reasonText(cause)), " ")
	for n := 0; n < 10000; n++ {
		dstName := name
		if n > 0 {
			dstName = name + "." + strconv.Itoa(n)
		}
		dst := filepath.Join(s.w.rejected, dstName)
		rf, err := os.OpenFile(dst+".reason", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			s.fsError("reject", name, err)
			return
		}
		_, werr := fmt.Fprintf(rf, "%s\n%s\n", code, reason)
		if cerr := rf.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = atomicfile.RenameNoReplace(path, dst)
		}
		if werr != nil {
			_ = os.Remove(dst + ".reason")
			if errors.Is(werr, fs.ErrExist) {
				continue
			}
			if !errors.Is(werr, fs.ErrNotExist) {
				s.fsError("reject", name, werr)
			}
			return
		}
		s.w.rejectedN.Add(1)
		s.w.log.Warn("trigger rejected", "name", name, "as", dstName, "code", code, "reason", reason)
		return
	}
	s.fsError("reject", name, errors.New("no free name in rejected/"))
}

// rescan rebuilds the picture from the directory listings.
func (s *runState) rescan(now time.Time) {
	s.rescanDue = false
	s.paused = false
	s.w.rescans.Add(1)
	if err := s.w.ensureDirs(); err != nil {
		s.w.log.Error("rescan", "err", err)
		s.w.noteError(err)
		return
	}
	if s.fw != nil && len(s.fw.WatchList()) == 0 {
		if err := s.fw.Add(s.w.dir); err != nil {
			s.w.log.Warn("re-add fsnotify watch", "err", err)
		} else {
			s.w.log.Info("watching the trigger dir again")
		}
	}

	// .claimed/ first: crash leftovers and transient failures.
	s.claimedQ = s.claimedQ[:0]
	if des, err := os.ReadDir(s.w.claimed); err == nil {
		for _, de := range des {
			if _, ok := ParseName(de.Name()); !ok {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue
			}
			s.claimedQ = append(s.claimedQ, claimedItem{name: de.Name(), mtime: fi.ModTime()})
		}
	} else {
		s.fsError("scan", ClaimedDir, err)
	}
	sort.Slice(s.claimedQ, func(i, j int) bool {
		a, b := s.claimedQ[i], s.claimedQ[j]
		if !a.mtime.Equal(b.mtime) {
			return a.mtime.Before(b.mtime)
		}
		return a.name < b.name
	})

	des, err := os.ReadDir(s.w.dir)
	if err != nil {
		s.fsError("scan", ".", err)
		return
	}
	present := make(map[string]bool, len(des))
	ignored := map[string]bool{}
	for _, de := range des {
		name := de.Name()
		if name[0] == '.' || name == RejectedDir {
			continue
		}
		target, ok := ParseName(name)
		if !ok && de.Type().IsRegular() && badTxtName(name) {
			// A .txt file meant for the hub whose name names no target:
			// refuse it visibly (once it has stopped changing) rather than
			// leave it unread forever.
			if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) >= s.w.opts.Settle {
				s.reject(filepath.Join(s.w.dir, name), name, Reject("invalid_target",
					"the file name %q names no target: write <target>.txt or <target>.<anything>.txt (target: letters, digits, single hyphens, at most %d bytes)", name, MaxTargetLen))
			}
			continue
		}
		if !ok || !de.Type().IsRegular() {
			ignored[name] = true
			if !s.ignored[name] {
				why := "not a trigger file name"
				if ok {
					why = "not a regular file"
				}
				s.w.log.Info("ignoring directory entry", "name", name, "why", why)
			}
			continue
		}
		present[name] = true
		if e := s.entries[name]; e != nil {
			if e.state == stBlocked {
				s.makeReady(e)
			}
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		e := s.newEntry(name, target, now)
		e.size, e.mtime, e.checked, e.quiet = fi.Size(), fi.ModTime(), now, fi.ModTime()
		if e.quiet.After(now) {
			e.quiet = now
		}
		if now.Sub(e.quiet) >= s.w.opts.Settle {
			s.makeReady(e)
		} else {
			s.settle(e, e.quiet, now)
		}
	}
	s.ignored = ignored
	for name, e := range s.entries {
		if !present[name] {
			s.drop(e)
		}
	}
}

// removeStaleMarkers deletes marker files a crashed run may have left.
func (s *runState) removeStaleMarkers() {
	des, err := os.ReadDir(s.w.dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), syncPrefix) {
			_ = os.Remove(filepath.Join(s.w.dir, de.Name()))
		}
	}
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

// badTxtName reports whether name looks like a trigger file (it ends in
// .txt, is not a dotfile or a temp file) even though ParseName refuses it.
func badTxtName(name string) bool {
	const ext = ".txt"
	return len(name) > 0 && name[0] != '.' && len(name) >= len(ext) &&
		strings.EqualFold(name[len(name)-len(ext):], ext)
}
