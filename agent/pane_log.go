package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The pane log is written in batches, not once per chunk of output. While
// output comes, the output that finds the batch logDelay old (or
// logBatch bytes long) writes it, on the reader's goroutine. Once output
// stops, a timer writes what is left at most logDelay×logQuietFactor (1 s)
// after it came. The timer is armed by a batch's first byte when it does
// not run already and is never stopped or moved by the writes output
// makes: it fires at most once a second while output streams. (Re-arming it for each batch, or
// firing it every logDelay, cost more CPU than one write per chunk:
// BenchmarkHosting, 0.064 and 0.067 against 0.055 CPU-s per MiB.)
// Whatever waits is written when the program exits and when the pane
// stops. A hub killed with -9 thus loses from the pane log at most the
// output of its last second, in practice of its last logDelay while
// output streamed; messages are never only in the pane log (the ledger
// has them).
const (
	logBatch       = 64 << 10
	logDelay       = 50 * time.Millisecond
	logQuietFactor = 20
)

// paneLog is a pane's output log (Spec.LogPath), rotated to path+".1"
// when it would pass max bytes (max ≤ 0: never), written in batches (see
// logDelay, for which delay stands). A nil *paneLog logs nothing. It is safe for concurrent use.
type paneLog struct {
	path  string
	max   int64
	delay time.Duration
	log   *slog.Logger

	mu    sync.Mutex
	f     *os.File // nil once closed or disabled by an error
	size  int64
	buf   []byte      // output not written yet
	first time.Time   // when buf's first byte came
	timer *time.Timer // writes what waits when it fires
	armed bool        // timer runs
}

// openPaneLog opens the pane log at path, if any; failures are logged and
// leave the pane without a log (nil).
func openPaneLog(path string, max int64, delay time.Duration, log *slog.Logger) *paneLog {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		log.Warn("pane log disabled", "err", fmt.Errorf("create log dir: %w", err))
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Warn("pane log disabled", "err", fmt.Errorf("open pane log: %w", err))
		return nil
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return &paneLog{path: path, max: max, delay: delay, log: log, f: f, size: size}
}

// append adds output that came at now to the batch, writing the batch
// when it is full or delay old, and otherwise making sure the timer runs.
func (l *paneLog) append(b []byte, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if len(l.buf) == 0 {
		l.first = now
	}
	l.buf = append(l.buf, b...)
	switch {
	case len(l.buf) >= logBatch || now.Sub(l.first) >= l.delay:
		l.flushLocked()
	case !l.armed:
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(l.delay*logQuietFactor, l.fire)
		} else {
			l.timer.Reset(l.delay * logQuietFactor)
		}
	}
}

// fire is the timer's: it writes what waits.
func (l *paneLog) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	l.flushLocked()
}

// flush writes whatever waits.
func (l *paneLog) flush() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

// flushLocked writes the batch, in pieces of at most max bytes, rotating
// the file before a piece that would make it pass max. The caller holds
// mu.
func (l *paneLog) flushLocked() {
	b := l.buf
	l.buf = l.buf[:0]
	for len(b) > 0 && l.f != nil {
		n := len(b)
		if l.max > 0 {
			n = int(min(int64(n), l.max))
			if l.size+int64(n) > l.max {
				l.rotateLocked()
				if l.f == nil {
					return
				}
			}
		}
		w, err := l.f.Write(b[:n])
		l.size += int64(w)
		if err != nil {
			l.log.Warn("pane log disabled", "err", fmt.Errorf("write pane log: %w", err))
			l.f.Close()
			l.f = nil
			return
		}
		b = b[n:]
	}
}

// rotateLocked moves the log to path+".1" and starts a new one; on failure
// the log is disabled (f nil). The caller holds mu.
func (l *paneLog) rotateLocked() {
	l.f.Close()
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		l.log.Warn("rotate pane log", "err", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		l.log.Warn("pane log disabled", "err", fmt.Errorf("reopen pane log: %w", err))
		return
	}
	l.f, l.size = f, 0
}

// close writes whatever waits and closes the log.
func (l *paneLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.armed {
		l.armed = false
		l.timer.Stop() // a callback already running finds the log closed
	}
	l.flushLocked()
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			l.log.Warn("close pane log", "err", err)
		}
		l.f = nil
	}
}
