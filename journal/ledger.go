package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Sentinel errors. Errors returned by the Ledger wrap one of these (test
// with errors.Is) together with the underlying cause.
var (
	// ErrUnavailable means the ledger cannot commit: the disk is full
	// (or MaxBytes is reached), the file is read-only, an I/O error
	// occurred, or the ledger is closed. Its text is the SPEC status.
	ErrUnavailable = errors.New(string(status.CodeJournalUnavailable))
	// ErrDuplicate means the message_id is already in the ledger; Append
	// returns the existing row along with it.
	ErrDuplicate = errors.New("journal: duplicate message_id")
	// ErrNotFound means no such message (or open obligation).
	ErrNotFound = errors.New("journal: not found")
	// ErrBadQuery means a full-text search query is malformed.
	ErrBadQuery = errors.New("journal: bad search query")
	// ErrClosed is returned for any call on a closed Ledger; it wraps
	// ErrUnavailable.
	ErrClosed = fmt.Errorf("journal: ledger closed: %w", ErrUnavailable)
	// ErrInvalid means an argument was rejected before anything was written.
	ErrInvalid = errors.New("journal: invalid argument")
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Durable selects synchronous=FULL instead of NORMAL.
	Durable bool
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// MaxBytes caps the database size (0 = unlimited), enforced with
	// PRAGMA max_page_count: once reached, commits fail with
	// ErrUnavailable until SetMaxBytes raises the cap. The WAL file is
	// not counted.
	MaxBytes int64
	// FTSInterval is how often committed bodies are indexed for Search
	// while some wait (default 500ms).
	FTSInterval time.Duration
	// MaxBatch caps how many queued operations share one transaction
	// (default 256).
	MaxBatch int
	// ReadOnly opens an existing ledger for queries only (CLI readers
	// beside a running hub): no writer, no indexing; every write returns
	// ErrUnavailable.
	ReadOnly bool
	// Readers is the size of the read-connection pool (default 3).
	Readers int
	// Now is the clock (default time.Now); tests inject a fixed one.
	Now func() time.Time
	// Key is the ledger key (KeySize bytes) the hash chain is keyed with;
	// when nil it is read from KeyPath (see key.go).
	Key []byte
	// KeyPath is the ledger key file (default: KeyFileName beside the
	// database, i.e. runtime/ledger-key). A writer creates it when absent;
	// a read-only ledger reads it only for Verify and Checkpoint.
	KeyPath string
	// HeadPath is a file outside the database where the writer keeps the
	// signed chain head (a Checkpoint), rewritten after each commit that
	// signs it (handoffs/ledger-checkpoint.json for a hub); empty: none.
	// Verify checks the ledger against it and against the heads a writer
	// kept aside beside it because the ledger it opened did not hold them
	// (headfile.go).
	HeadPath string

	// filePoll replaces watchInterval and noNotify turns the directory
	// notification off, for tests of the watch loop.
	filePoll time.Duration
	noNotify bool
}

// Ledger is the evidence ledger: an SQLite database with one writer
// goroutine that group-commits every write, and a small pool of read-only
// connections. All methods are safe for concurrent use.
type Ledger struct {
	path string
	opts Options
	log  *slog.Logger
	now  func() time.Time

	ops chan *op // to the writer goroutine

	mu      sync.RWMutex // guards closed against submissions
	closed  bool
	closing chan struct{} // closed when Close starts

	stop       chan struct{} // tells the writer to drain and exit
	writerDone chan struct{}
	writerErr  error // set by the writer before writerDone closes

	ftsCancel context.CancelFunc
	ftsDone   chan struct{}
	ftsKick   chan struct{} // buffered 1: a commit left bodies to index
	// The checkpointer copies WAL frames into the database on its own
	// connection, concurrently with the writer, when the writer asks.
	ckptReq   chan struct{}
	walFrames atomic.Int64 // WAL length at the last PASSIVE checkpoint, until the writer takes it (boundWAL)
	// ckptWhole (buffered 1) tells the writer a PASSIVE checkpoint copied
	// the whole WAL: the next commit would start the WAL over (primeWAL).
	ckptWhole chan struct{}
	// idleCkptDelay overrides idleCheckpointDelay when set (tests).
	idleCkptDelay atomic.Int64
	ckptStop      chan struct{}
	ckptDone      chan struct{}
	ckptPause     chan ckptPause // the writer re-creating the files (recover.go)
	ftsQueued     atomic.Bool    // an FTS tick op is waiting in ops
	ftsFailing    atomic.Bool    // indexing is failing (logged once per streak)

	committedRowID atomic.Int64 // highest committed row_id (writer publishes)
	indexedRowID   atomic.Int64 // highest row_id in comms_fts (writer publishes)

	readers  chan *sqlite.Conn
	nReaders int
	// readersLost is closed when the read connections could not be
	// reopened on re-created files (recover.go): reads then fail.
	readersLost chan struct{}

	subsMu  sync.Mutex
	subs    map[*subscription]struct{}
	dropped atomic.Uint64

	commits atomic.Int64 // committed write transactions
	opsDone atomic.Int64 // operations committed in them

	// files watches the database and WAL files (watch.go).
	files     fileWatch
	watchDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	keyMu      sync.Mutex
	key        *ledgerKey // nil until loaded (read-only ledgers load it lazily)
	keyCreated bool       // Open made a new key file
}

// Open opens (creating if needed, mode 0600) the ledger at path, applies
// migrations and starts the writer and indexing goroutines, which Close
// stops. ctx bounds the opening only.
func Open(ctx context.Context, path string, opts Options) (*Ledger, error) {
	pinAllocatorPages()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.FTSInterval <= 0 {
		opts.FTSInterval = 500 * time.Millisecond
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Readers <= 0 {
		opts.Readers = 3
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Ledger{
		path:        path,
		opts:        opts,
		log:         opts.Logger.With("component", "journal"),
		now:         opts.Now,
		ops:         make(chan *op, 4096),
		closing:     make(chan struct{}),
		stop:        make(chan struct{}),
		writerDone:  make(chan struct{}),
		ftsDone:     make(chan struct{}),
		ftsKick:     make(chan struct{}, 1),
		ckptReq:     make(chan struct{}, 1),
		ckptWhole:   make(chan struct{}, 1),
		ckptStop:    make(chan struct{}),
		ckptDone:    make(chan struct{}),
		ckptPause:   make(chan ckptPause),
		subs:        make(map[*subscription]struct{}),
		watchDone:   make(chan struct{}),
		readersLost: make(chan struct{}),
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	// The key first: a bad key file stops Open before anything is written.
	if err := l.setupKey(); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", path, err)
		}
	} else if err := createFile(path); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}

	var w *writer
	if !opts.ReadOnly {
		conn, err := openWriterConn(ctx, path, opts)
		if err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", path, classify(err))
		}
		w, err = newWriter(l, conn)
		if err == nil {
			err = w.checkHeadFile()
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("open ledger %s: %w", path, err)
		}
		chmodSidecars(path)
	}

	l.readers = make(chan *sqlite.Conn, opts.Readers)
	for range opts.Readers {
		conn, err := openReaderConn(path)
		if err == nil && opts.ReadOnly && l.nReaders == 0 {
			err = checkSchema(conn)
		}
		if err != nil {
			if conn != nil {
				conn.Close()
			}
			l.closeReaders()
			if w != nil {
				w.conn.Close()
			}
			return nil, fmt.Errorf("open ledger %s: reader: %w", path, err)
		}
		l.readers <- conn
		l.nReaders++
	}

	if opts.ReadOnly {
		close(l.watchDone)
		close(l.writerDone)
		close(l.ftsDone)
		close(l.ckptDone)
		l.ftsCancel = func() {}
		return l, nil
	}
	if err := l.watch(); err != nil {
		l.closeReaders()
		w.conn.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	ckpt, err := openCheckpointConn(path)
	if err != nil {
		l.files.close()
		l.closeReaders()
		w.conn.Close()
		return nil, fmt.Errorf("open ledger %s: checkpointer: %w", path, classify(err))
	}
	go l.checkpointLoop(ckpt)
	go l.watchLoop()
	go w.run()
	ftsCtx, cancel := context.WithCancel(context.Background())
	l.ftsCancel = cancel
	go l.ftsLoop(ftsCtx)
	return l, nil
}

// Stats are counters of the writer since Open.
type Stats struct {
	Commits int64 // write transactions committed
	Ops     int64 // operations applied in them (Ops/Commits = mean batch)
	Dropped uint64
}

// Stats returns the writer's counters.
func (l *Ledger) Stats() Stats {
	return Stats{Commits: l.commits.Load(), Ops: l.opsDone.Load(), Dropped: l.dropped.Load()}
}

// Path returns the database file path.
func (l *Ledger) Path() string { return l.path }

// Close drains queued writes, indexes everything for Search, stops the
// goroutines and closes every connection (waiting for reads in progress).
// Subscription channels are closed. Close is idempotent; calls after the
// first return the first result.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.closing)
		l.mu.Unlock()
		l.files.stopNotify()

		l.ftsCancel()
		<-l.ftsDone
		if !l.opts.ReadOnly {
			close(l.ckptStop)
			<-l.ckptDone
			close(l.stop)
		}
		<-l.writerDone
		<-l.watchDone
		l.files.close()
		l.closeErr = l.writerErr
		if err := l.closeReaders(); err != nil && l.closeErr == nil {
			l.closeErr = err
		}
		l.closeSubscribers()
	})
	return l.closeErr
}

func (l *Ledger) closeReaders() error {
	var first error
	for ; l.nReaders > 0; l.nReaders-- {
		conn := <-l.readers
		if err := conn.Close(); err != nil && first == nil {
			first = fmt.Errorf("close reader: %w", err)
		}
	}
	return first
}

// Read runs fn on a pooled read-only connection inside one read
// transaction, so every query in fn sees the same snapshot. fn must not
// BEGIN/COMMIT itself and must reset any statement it leaves unfinished.
// ctx cancellation interrupts running queries.
func (l *Ledger) Read(ctx context.Context, fn func(conn *sqlite.Conn) error) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("journal read: %w", err)
	}
	var conn *sqlite.Conn
	select {
	case <-l.closing:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("journal read: %w", ctx.Err())
	case conn = <-l.readers:
	case <-l.readersLost:
		return fmt.Errorf("journal read: %w", ErrFilesGone)
	}
	defer func() {
		conn.SetInterrupt(nil) // also resets statements fn left mid-result
		if !conn.AutocommitEnabled() {
			if rerr := sqlitex.Execute(conn, "ROLLBACK", nil); rerr != nil && err == nil {
				err = fmt.Errorf("journal read: end: %w", rerr)
			}
		}
		l.readers <- conn
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
	}()
	select {
	case <-l.closing:
		return ErrClosed
	default:
	}
	if ctx.Done() != nil {
		conn.SetInterrupt(ctx.Done())
	}
	if err := sqlitex.Execute(conn, "BEGIN DEFERRED", nil); err != nil {
		return fmt.Errorf("journal read: begin: %w", err)
	}
	return fn(conn)
}

// classify wraps SQLite errors that mean "cannot write" in ErrUnavailable.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultFull, sqlite.ResultReadOnly, sqlite.ResultIOErr, sqlite.ResultCantOpen,
		sqlite.ResultNotADB, sqlite.ResultCorrupt, sqlite.ResultNoMem, sqlite.ResultBusy,
		sqlite.ResultLocked, sqlite.ResultPerm, sqlite.ResultProtocol, sqlite.ResultAuth:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// checkpointLoop runs PASSIVE checkpoints on its own connection when the
// writer asks, so copying WAL frames (and the fsync of the database file)
// never delays a commit. While the writer re-creates the files it closes
// its connection and opens a new one when told to resume.
func (l *Ledger) checkpointLoop(conn *sqlite.Conn) {
	defer close(l.ckptDone)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-l.ckptStop:
			return
		case p := <-l.ckptPause:
			if conn != nil {
				conn.Close()
				conn = nil
			}
			close(p.released)
			select {
			case <-l.ckptStop:
				return
			case <-p.resume:
			}
			c, err := openCheckpointConn(l.path)
			if err != nil {
				l.log.Warn("journal: checkpointer: reopen", "err", err)
			}
			conn = c
			continue
		case <-l.ckptReq:
		}
		if conn == nil {
			continue // could not reopen: the writer's RESTART checkpoints still bound the WAL
		}
		busy, logFrames, done, err := walCheckpoint(conn, "PASSIVE")
		if err == nil {
			l.walFrames.Store(logFrames)
		}
		if err != nil {
			l.log.Warn("journal: checkpoint failed", "err", err)
			continue
		}
		l.log.Debug("journal: checkpoint", "busy", busy, "wal_frames", logFrames, "checkpointed", done)
		if busy == 0 && logFrames > 0 && done == logFrames {
			select {
			case l.ckptWhole <- struct{}{}:
			default:
			}
		}
	}
}

// maxWALFrames is the WAL length (in pages) past which the writer restarts
// the WAL (about 64 MiB of 4 KiB pages): under sustained load readers keep
// it from being reset by PASSIVE checkpoints alone, so the WAL, and its
// index, which is mapped into the hub's memory, would grow for the whole
// session (85 MiB RSS after 1M messages). Each restart holds the writer
// for a few milliseconds (it copies what the last PASSIVE checkpoint left
// and syncs the database file): at 4,096 pages it came every ~450 serial
// sends and made a fifth of the slowest 1% of send→ACKs.
const maxWALFrames = 16384

// walCheckpoint runs PRAGMA wal_checkpoint(mode) on conn and returns its
// three results: busy, frames in the WAL, frames checkpointed.
func walCheckpoint(conn *sqlite.Conn, mode string) (busy, logFrames, done int64, err error) {
	err = sqlitex.ExecuteTransient(conn, "PRAGMA wal_checkpoint("+mode+")", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			busy, logFrames, done = stmt.ColumnInt64(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)
			return nil
		},
	})
	return busy, logFrames, done, err
}
