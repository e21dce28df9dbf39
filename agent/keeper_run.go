package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// keeperRun is the state of one pane in its host (paneHost): its
// configuration, the pane's master, and the adoption requests that
// authenticated connections (keeper_adopt.go) pass to its one loop.
type keeperRun struct {
	cfg     keeperConfig
	master  *os.File
	reqs    chan *adoptReq
	ended   chan struct{} // closed once run returned: nobody takes reqs
	entered *enteredLog   // cfg.Entered, opened at the first keeperEnter
}

// keeperAdoptWait is how long a keeper whose hub still seems alive holds
// an authenticated adoption request: right after a kill -9 of the hub the
// new hub may connect before the keeper read end of file on the old one's
// channel.
const keeperAdoptWait = 3 * time.Second

// run serves one hub after another: it waits while a hub owns the pane,
// holds the terminal when it is gone, and ends when told to quit, when
// grace passes with no new hub, or when the program's terminal closed.
// The pane's master is closed when it returns; told to quit, the
// channel closes after it, which tells the hub it is done.
func (k *keeperRun) run(hub *bufio.Reader, ch *net.UnixConn) {
	defer k.master.Close()
	defer func() { _ = k.entered.close() }()
	for {
		quit, pending := k.attend(hub, ch)
		if quit {
			k.master.Close()
			ch.Close()
			if pending != nil {
				pending.conn.Close()
			}
			return
		}
		ch.Close()
		req := k.orphan(pending)
		if req == nil {
			return
		}
		hub, ch = req.rd, req.conn
	}
}

// attend serves the hub's channel while the hub owns the pane: until it
// says quit (true) or its channel ends (the hub is gone). An adoption
// request that comes meanwhile waits keeperAdoptWait for that end and is
// returned to be served, or is refused.
func (k *keeperRun) attend(hub *bufio.Reader, ch io.Writer) (quit bool, pending *adoptReq) {
	gone := make(chan bool, 1)
	go func() { gone <- k.serveHub(hub, ch) }()
	var timeout <-chan time.Time
	for {
		select {
		case q := <-gone:
			return q, pending
		case r := <-k.reqs:
			if pending != nil {
				pending.conn.Close()
			}
			pending, timeout = r, time.After(keeperAdoptWait)
		case <-timeout:
			pending.conn.Close() // its hub still runs: refused
			pending, timeout = nil, nil
		}
	}
}

// serveHub reads the hub's requests (keeper.go: keeperQuit, keeperEnter)
// until the channel ends (false) or carries keeperQuit (true). Every
// request the channel holds is served before its end is: an Enter the
// hub asked for just before it was killed is pressed and recorded. A last
// line cut by the hub's death is no request.
func (k *keeperRun) serveHub(hub *bufio.Reader, ch io.Writer) bool {
	for {
		line, err := hub.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) { // no request is this long
				_, err = hub.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			return false
		}
		op, arg, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
		switch op {
		case keeperQuit:
			return true
		case keeperEnter:
			// An answer the gone hub does not read is of no matter: the
			// next read finds the end.
			_, _ = io.WriteString(ch, k.enter(arg)+"\n")
		}
	}
}

// enter presses Enter in the pane's terminal for message id and then
// records id in the pane's entered log, answering as keeperEnter says.
func (k *keeperRun) enter(id string) string {
	if !recordableID(id) {
		return enterFailed + " no message id to record"
	}
	_ = k.master.SetWriteDeadline(time.Now().Add(keeperEnterSlice))
	_, err := k.master.Write([]byte{'\r'})
	_ = k.master.SetWriteDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return enterBusy
	case err != nil:
		return enterFailed + " " + oneLine(err.Error())
	}
	if k.entered == nil && k.cfg.Entered != "" {
		el, err := openEnteredLog(k.cfg.Entered)
		if err != nil {
			return enterDone + " " + oneLine(err.Error())
		}
		k.entered = el
	}
	if err := k.entered.add(id); err != nil {
		return enterDone + " " + oneLine(err.Error())
	}
	return enterDone
}

// oneLine is s with its line breaks made spaces, for an answer line.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// orphan holds the terminal while no hub owns the pane: the program's
// output goes to a ring, so that it never blocks writing, until a new hub
// adopts the pane (its request is returned), grace passes or the terminal
// closed (nil: the keeper ends, which hangs the terminal up).
func (k *keeperRun) orphan(pending *adoptReq) *adoptReq {
	out := newRing(k.cfg.RingBytes)
	d := startDrain(k.master, out)
	defer d.stop()
	grace := time.NewTimer(k.cfg.Grace)
	defer grace.Stop()
	for {
		req := pending
		pending = nil
		if req == nil {
			select {
			case <-grace.C:
				return nil
			case <-d.done:
				return nil // the program's terminal closed: nothing to adopt
			case req = <-k.reqs:
			}
		}
		d.stop()
		err := req.handOver(k.master, k.cfg, out.Tail(-1))
		if err == nil {
			return req
		}
		req.conn.Close()
		d = startDrain(k.master, out)
	}
}

// drain reads a master into a ring until stopped or the terminal closes.
type drain struct {
	master *os.File
	done   chan struct{}
	once   sync.Once
}

// startDrain starts reading master into out.
func startDrain(master *os.File, out *ring) *drain {
	d := &drain{master: master, done: make(chan struct{})}
	_ = master.SetReadDeadline(time.Time{})
	go func() {
		defer close(d.done)
		b := make([]byte, 32<<10)
		for {
			n, err := master.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	return d
}

// stop ends the reading (a read deadline in the past interrupts it) and
// waits for it; the master is then free for another reader.
func (d *drain) stop() {
	d.once.Do(func() {
		_ = d.master.SetReadDeadline(time.Now())
		<-d.done
		_ = d.master.SetReadDeadline(time.Time{})
	})
}

// keeperListener is a keeper's socket, removed at close if it is still
// the one this keeper bound.
type keeperListener struct {
	ln   *net.UnixListener
	path string
	st   os.FileInfo
}

// listenKeeper binds a 0600 unix socket at path. A file left there (a
// keeper that died, or one of another hub that this one refused) is
// replaced: a keeper still listening on it keeps its socket, unnamed.
func listenKeeper(path string) (*keeperListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("pane keeper: listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // only if still ours (close)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	return &keeperListener{ln: ln, path: path, st: st}, nil
}

// close stops listening and removes the socket unless another keeper has
// bound the path since.
func (l *keeperListener) close() {
	l.ln.Close()
	if st, err := os.Stat(l.path); err == nil && os.SameFile(st, l.st) {
		_ = os.Remove(l.path)
	}
}
