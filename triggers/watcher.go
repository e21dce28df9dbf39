package triggers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
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

// ErrRunning is returned by Run when the Watcher is already running.
var ErrRunning = errors.New("trigger watcher already running")

// File is one claimed, decoded trigger file.
type File struct {
	Name      string     // original file name, e.g. "architect.hm-123-abc.txt"
	Target    string     // target part of the name, lower-cased: "architect", "all", "others-builder", ...
	MessageID string     // from the "[HM-MESSAGE-ID:<id>]" first line, else FileID of the file
	IDDerived bool       // MessageID is the watcher's FileID (in the hub's reserved namespace)
	Content   string     // decoded, cleaned message text (header included as written)
	Sig       *Signature // the "[HM-SIG:]" line, nil for an unsigned file; the sink verifies it
	ClaimedAt time.Time  // when the watcher claimed it
	Seen      time.Time  // when the watcher first observed it
}

// Sink commits a trigger file (the hub routes it and records it in the
// ledger). An error wrapping ErrReject (see Reject) moves the file to
// rejected/ with a reason file; any other error is transient: the file is kept
// and retried at the next rescan. The sink must return when ctx is done.
type Sink func(ctx context.Context, f File) error

// Options tune a Watcher. Zero values select the defaults.
type Options struct {
	Rescan   time.Duration // full rescan period while events cannot see everything (see runState.blind); default 2s
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

	// now is the clock of every readiness decision (quiet periods, marker
	// timeouts, claim times); time.Now unless a test drives time by hand.
	// The event loop's ticker and timer only wake it up, so they stay real.
	now func() time.Time

	// openForWriting reports whether a process holds a file open for
	// writing (see openfd_linux.go); a test may replace it.
	openForWriting func(path string) bool

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
		now:      time.Now,

		openForWriting: openForWriting,
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
	w.lastErrAt = w.now()
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
// present, then follows fsnotify events with a full rescan on a watcher
// error or queue overflow, and every Rescan only while events cannot see
// everything (fsnotify unavailable or not watching, a paused or blocked
// file, a misnamed file waiting to be refused). If fsnotify is unavailable
// it keeps working by rescans alone. Run returns nil when ctx is done, after stopping every goroutine it
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
	s.rescan(w.now())
	w.log.Debug("trigger watcher started", "claimed", len(s.claimedQ), "files", len(s.entries))
	s.loop(ctx)
	return nil
}
