package agent

import (
	"bytes"
	"errors"
	"io/fs"
	"syscall"
	"time"
)

// readLoop copies program output into the pane until the PTY closes.
func (p *Pane) readLoop(pr *proc) {
	defer close(pr.readerDone)
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

// handleOutput records one chunk of program output.
func (p *Pane) handleOutput(pr *proc, data []byte) {
	now := time.Now()
	pr.scan.Write(data) // may queue OnLine calls
	chunk := bytes.Clone(data)
	p.mu.Lock()
	if p.proc == pr {
		p.lastOutput = now
		p.sawOutput = true
		p.bracketed = pr.scan.Bracketed()
		close(p.outChanged)
		p.outChanged = make(chan struct{})
	}
	p.ring.Write(chunk)
	p.fanout(chunk)
	p.mu.Unlock()
	p.appendLog(chunk)
}

// notice shows an hm message in the pane's output (replay, viewers, log)
// without counting as program activity.
func (p *Pane) notice(msg string) {
	b := []byte("\r\n[hm] " + Neutralize(msg) + "\r\n")
	p.mu.Lock()
	p.ring.Write(b)
	p.fanout(b)
	p.mu.Unlock()
	p.appendLog(b)
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
