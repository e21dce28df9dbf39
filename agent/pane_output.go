package agent

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readLoop copies program output into the pane until the PTY closes.
func (p *Pane) readLoop(pr *proc) {
	defer close(pr.readerDone)
	defer close(pr.replies) // the reader is the only sender
	buf := make([]byte, readBufferSize)
	for {
		n, err := pr.master.Read(buf)
		if n > 0 {
			p.handleOutput(pr, buf[:n])
		}
		if err != nil {
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, fs.ErrClosed) {
				p.log.Debug("pane output read ended", "err", err)
			}
			return
		}
	}
}

// handleOutput records one chunk of program output: the virtual terminal
// follows it, the raw bytes go to the replay buffer, the viewers and the
// log, and the terminal's answers to queries go back to the program unless
// a viewer that types is attached (its own terminal answers then). data is
// the reader's buffer: only the viewers keep a chunk, and get a copy.
func (p *Pane) handleOutput(pr *proc, data []byte) {
	now := time.Now()
	pr.scan.Write(data) // may queue OnLine calls
	p.vtMu.Lock()
	p.keepTailLocked(pr, data, now)
	p.vt.Write(data)
	replies := p.vt.Replies()
	bracketed := p.vt.BracketedPaste()
	var class Readiness
	var queued int
	held, watch := p.hookHeld.Load(), p.queueWatch.Load()
	if held || watch {
		s := p.screenLocked()
		class, _ = p.profile.Classify(s)
		if watch {
			queued = p.profile.queuedLines(s)
		}
	}
	p.mu.Lock()
	if held {
		p.contradictHookLocked(pr, class)
	}
	if watch {
		p.noteQueuedLocked(pr, class, queued, now)
	}
	if p.proc == pr {
		p.lastOutput = now
		p.sawOutput = true
		p.bracketed = bracketed
		close(p.outChanged)
		p.outChanged = make(chan struct{})
	}
	answer := p.typists == 0
	p.ring.Write(data)
	if len(p.subs) > 0 {
		p.fanout(bytes.Clone(data))
	}
	p.mu.Unlock()
	p.vtMu.Unlock()
	p.plog.append(data, now)
	if len(replies) > 0 && answer {
		select {
		case pr.replies <- replies:
		default:
			p.log.Debug("terminal replies dropped: program does not read them", "bytes", len(replies))
		}
	}
}

// keepTailLocked adds data, output that came at now, to run pr's screen
// tail (screen_tail.go). When the tail would no longer hold all the
// output since its replay start, it starts over with a drawing of the
// screen as it is before data. The caller holds vtMu, under which the
// tail is written.
func (p *Pane) keepTailLocked(pr *proc, data []byte, now time.Time) {
	if pr.tail == nil {
		return
	}
	if !pr.tail.fits(len(data)) {
		pr.tail.restart(p.vt.Render(p.vt.Size()))
	}
	pr.tail.write(data)
	pr.tail.stamp(now)
}

// replyLoop types the virtual terminal's answers to the program's queries
// into the run's input, between (never inside) other writes, as soon as
// they come: also while the delivery engine holds inputMu between a
// message's text and its Enter, because a program that asks something
// while it is typed into may show the text only once it has the answer.
// It ends when the reader closed pr.replies.
func (p *Pane) replyLoop(pr *proc) {
	defer close(pr.repliesDone)
	for b := range pr.replies {
		if pr.isExited() {
			continue
		}
		_, err := p.writeRaw(context.Background(), pr, b)
		if err != nil {
			p.log.Debug("terminal reply not written", "err", err)
		}
	}
}

// addTypist records an attached viewer that may type: while one is, its
// terminal answers the program's queries and the pane's does not (a
// program must not get two answers). It returns the function that removes
// it again.
func (p *Pane) addTypist() func() {
	p.mu.Lock()
	p.typists++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.typists--
			p.mu.Unlock()
		})
	}
}

// notice shows an hm message in the pane's output (screen, replay, viewers,
// log) without counting as program activity.
func (p *Pane) notice(msg string) {
	b := []byte("\r\n[hm] " + Neutralize(msg) + "\r\n")
	p.vtMu.Lock()
	p.vt.Write(b)
	p.vt.Replies()
	p.mu.Lock()
	p.ring.Write(b)
	p.fanout(b)
	p.mu.Unlock()
	p.vtMu.Unlock()
	p.plog.append(b, time.Now())
}

// subscribeScreen is subscribe whose first bytes are the current screen
// rendered for a cols x rows terminal, with no gap or overlap between the
// screen and the live output.
func (p *Pane) subscribeScreen(cols, rows int) ([]byte, *subscription, func()) {
	p.vtMu.Lock()
	defer p.vtMu.Unlock()
	screen := p.vt.Render(cols, rows)
	_, s, cancel := p.subscribe(0)
	return screen, s, cancel
}

// Screen is a snapshot of a pane's virtual terminal.
type Screen struct {
	// Lines holds every row's text, trailing blanks removed.
	Lines []string
	// Cols and Rows are the terminal size.
	Cols, Rows int
	// CursorRow and CursorCol are the cursor position, 0-based.
	CursorRow, CursorCol int
	// AltScreen: the program shows its alternate (full-screen) buffer.
	AltScreen bool
	// BracketedPaste: the program switched bracketed paste on.
	BracketedPaste bool
	// AppCursor: cursor keys send application sequences (DECCKM).
	AppCursor bool
	// CursorVisible: the cursor is shown.
	CursorVisible bool
	// Title is the window title the program set.
	Title string
}

// Text returns the screen's rows joined by newlines, trailing empty rows
// dropped.
func (s Screen) Text() string {
	ls := s.Lines
	for len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return strings.Join(ls, "\n")
}

// Screen returns what the pane's terminal shows now.
func (p *Pane) Screen() Screen {
	p.vtMu.Lock()
	defer p.vtMu.Unlock()
	return p.screenLocked()
}

// screenLocked snapshots the terminal; the caller holds vtMu.
func (p *Pane) screenLocked() Screen {
	cols, rows := p.vt.Size()
	r, c := p.vt.Cursor()
	return Screen{
		Lines:          p.vt.Lines(),
		Cols:           cols,
		Rows:           rows,
		CursorRow:      r,
		CursorCol:      c,
		AltScreen:      p.vt.AltScreen(),
		BracketedPaste: p.vt.BracketedPaste(),
		AppCursor:      p.vt.AppCursor(),
		CursorVisible:  p.vt.CursorVisible(),
		Title:          p.vt.Title(),
	}
}

// subscription is one live-output listener.
type subscription struct {
	ch     chan []byte
	reason string // why the pane closed ch; set before the close
}

// close ends the subscription; the caller holds p.mu.
func (s *subscription) close(reason string) {
	s.reason = reason
	close(s.ch)
}

// fanout passes a chunk to every subscriber; one that cannot keep up is
// dropped. The caller holds p.mu.
func (p *Pane) fanout(chunk []byte) {
	for s := range p.subs {
		select {
		case s.ch <- chunk:
		default:
			delete(p.subs, s)
			s.close("viewer too slow for the output rate; attach again")
		}
	}
}

// Subscribe returns a channel of live output chunks (shared, read-only) and
// a function that ends the subscription. The channel is closed when the
// subscriber falls too far behind or the pane stops.
func (p *Pane) Subscribe() (<-chan []byte, func()) {
	_, s, cancel := p.subscribe(0)
	return s.ch, cancel
}

// SubscribeReplay is Subscribe that also returns the last max bytes of
// output, with no gap or overlap between the two.
func (p *Pane) SubscribeReplay(max int) ([]byte, <-chan []byte, func()) {
	replay, s, cancel := p.subscribe(max)
	return replay, s.ch, cancel
}

func (p *Pane) subscribe(max int) ([]byte, *subscription, func()) {
	s := &subscription{ch: make(chan []byte, subscriberBuf)}
	p.mu.Lock()
	defer p.mu.Unlock()
	replay := p.ring.Tail(max)
	if p.subsClosed {
		s.close("pane stopped")
		return replay, s, func() {}
	}
	p.subs[s] = struct{}{}
	cancel := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.subs[s]; ok {
			delete(p.subs, s)
			s.close("unsubscribed")
		}
	}
	return replay, s, cancel
}
