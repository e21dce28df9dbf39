package agent

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// paneHost is the state of a pane host process (RunKeeper): the panes it
// holds, each run by a keeperRun of its own, and the listener by which
// later panes join and new hubs adopt (keeper_adopt.go).
type paneHost struct {
	root   string
	secret string
	ln     *keeperListener // nil: no pane joins, no hub adopts

	mu      sync.Mutex
	panes   []*keeperRun // oldest first
	closing bool         // no pane remains: joins are turned away
	empty   chan struct{}
}

// RunKeeper is the body of a pane host process (see Keeper): descriptor 3
// is the first pane's PTY master, 4 its channel from the hub, whose first
// line is the keeperConfig, and 5, when the configuration names a socket,
// the host's listening socket. It returns once no pane remains; the
// caller then exits.
func RunKeeper() error {
	for _, d := range []struct {
		fd   int
		mode uint32
	}{{keeperMasterFD, unix.S_IFCHR}, {keeperHubFD, unix.S_IFSOCK}} {
		if !fdIs(d.fd, d.mode) {
			return fmt.Errorf("pane keeper: descriptor %d is not the pane's terminal and the hub's channel: the hub starts this command itself, beside its panes' programs", d.fd)
		}
	}
	// The master is non-blocking (the hub's open file description), so
	// os.NewFile registers it with the poller and read deadlines work.
	master := os.NewFile(keeperMasterFD, "pty-master")
	ch, err := fileConn(os.NewFile(keeperHubFD, "hub"))
	if err != nil {
		return fmt.Errorf("pane keeper: the hub's channel: %w", err)
	}
	rd := bufio.NewReader(ch)
	var cfg keeperConfig
	if err := readLine(rd, &cfg); err != nil {
		return fmt.Errorf("pane keeper: the hub's configuration: %w", err)
	}
	h := &paneHost{root: cfg.Root, secret: cfg.Secret, empty: make(chan struct{})}
	if cfg.Socket != "" {
		ln, err := inheritListener(cfg.Socket)
		if err != nil {
			// Runs on as a host that cannot be joined or adopted.
			fmt.Fprintln(os.Stderr, err)
		} else {
			h.ln = ln
			defer ln.close()
		}
	}
	h.add(cfg, master, rd, ch)
	if h.ln != nil {
		go h.serve()
	}
	<-h.empty
	return nil
}

// fdIs reports whether descriptor fd is open with file type mode.
func fdIs(fd int, mode uint32) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && uint32(st.Mode)&unix.S_IFMT == mode
}

// fileConn makes f, a connected unix socket, a connection (f is closed).
func fileConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%T is not a unix socket", c)
	}
	return uc, nil
}

// inheritListener takes the socket the hub bound at path for this host
// (descriptor keeperListenFD).
func inheritListener(path string) (*keeperListener, error) {
	if !fdIs(keeperListenFD, unix.S_IFSOCK) {
		return nil, fmt.Errorf("pane keeper: descriptor %d is not the socket for %s", keeperListenFD, path)
	}
	f := os.NewFile(keeperListenFD, path)
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("pane keeper: listen on %s: %w", path, err)
	}
	ln, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, fmt.Errorf("pane keeper: %s is not a unix socket", path)
	}
	ln.SetUnlinkOnClose(false) // only if still ours (close)
	st, err := os.Stat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	return &keeperListener{ln: ln, path: path, st: st}, nil
}

// add runs a pane in the host until it is dropped: its master is then
// closed and, with the last pane gone, the host ends. false: the host is
// ending and took nothing (master and ch are closed).
func (h *paneHost) add(cfg keeperConfig, master *os.File, hub *bufio.Reader, ch *net.UnixConn) bool {
	if cfg.Grace <= 0 {
		cfg.Grace = KeeperGrace
	}
	if cfg.RingBytes <= 0 {
		cfg.RingBytes = KeeperRingBytes
	}
	k := &keeperRun{cfg: cfg, master: master, reqs: make(chan *adoptReq), ended: make(chan struct{})}
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		master.Close()
		ch.Close()
		return false
	}
	h.panes = append(h.panes, k)
	h.mu.Unlock()
	go func() {
		k.run(hub, ch)
		close(k.ended)
		h.drop(k)
	}()
	return true
}

// drop removes k, whose master is closed, and ends the host once no
// pane remains.
func (h *paneHost) drop(k *keeperRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range h.panes {
		if p == k {
			h.panes = append(h.panes[:i], h.panes[i+1:]...)
			break
		}
	}
	if len(h.panes) == 0 && !h.closing {
		h.closing = true
		if h.ln != nil {
			h.ln.ln.Close() // no join is accepted while the host ends
		}
		close(h.empty)
	}
}

// pane is the newest pane of role the host holds, or nil.
func (h *paneHost) pane(role string) *keeperRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.panes) - 1; i >= 0; i-- {
		if h.panes[i].cfg.Pane == role {
			return h.panes[i]
		}
	}
	return nil
}

// serve accepts connections until the listener closes, each handled on
// a goroutine of its own.
func (h *paneHost) serve() {
	for {
		c, err := h.ln.ln.AcceptUnix()
		if err != nil {
			return
		}
		go h.handle(c)
	}
}

// handle authenticates a hub and serves what it asked: a pane joins, or
// an adoption request goes to the pane's loop.
func (h *paneHost) handle(c *net.UnixConn) {
	hello, rd, ok := h.authenticate(c)
	if !ok {
		c.Close()
		return
	}
	if hello.Op == opJoin {
		h.join(c, rd)
		return
	}
	if k := h.pane(hello.Pane); k != nil && k.take(&adoptReq{conn: c, rd: rd}) {
		return
	}
	c.Close() // dropped meanwhile: the hub sees no hand-over
}

// take passes req to the pane's loop; false when the pane was dropped
// meanwhile (nobody would take it).
func (k *keeperRun) take(req *adoptReq) bool {
	select {
	case k.reqs <- req:
		return true
	case <-k.ended:
		return false
	}
}

// join takes in a pane a hub hands over (keeper_adopt.go: joinHost).
func (h *paneHost) join(c *net.UnixConn, rd *bufio.Reader) {
	fail := func() { c.Close() }
	if writeLine(c, keeperProof{Ready: true}) != nil {
		fail()
		return
	}
	master, err := receiveFD(c, rd)
	if err != nil {
		fail()
		return
	}
	var cfg keeperConfig
	if err := readLine(rd, &cfg); err != nil || cfg.Root != h.root {
		master.Close()
		fail()
		return
	}
	cfg.Socket, cfg.Secret = h.ln.path, h.secret
	clearDeadline(c)
	if h.add(cfg, master, rd, c) {
		// A hub that misses this closes the channel: the pane is then
		// held for its grace as after the hub's death.
		_ = writeLine(c, keeperJoined{HostPid: os.Getpid()})
	}
}

// keeperJoined is the host's answer to a pane that joined.
type keeperJoined struct {
	HostPid int `json:"hostPid"`
}
