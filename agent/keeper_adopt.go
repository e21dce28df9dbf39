package agent

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hm/internal/ground/buildinfo"
)

// Adoption and joining, over the pane host's unix socket (HostSocket):
//
//  1. hub → host: hello {op, pane, root, nonce, protocol, version}; a
//     host of another root, or of another pane protocol
//     (CheckPaneProtocol), answers {refused} and closes; asked to adopt a
//     pane it does not hold, it answers {none} and closes.
//  2. host → hub: {nonce, mac, protocol, version}, mac =
//     HMAC-SHA256(secret, "keeper" and both nonces, pane, root and op); a
//     hub whose secret gives another mac refuses the host and leaves it
//     alone, as it does one of another pane protocol.
//  3. hub → host: {mac} of "hub" and the same; a host that cannot check
//     it closes. Neither side ever sends the secret.
//  4. adopt, host → hub, once the pane's old hub is gone: one byte
//     carrying the master (SCM_RIGHTS), a line {pid, keeperPid, output},
//     then output bytes of buffered program output.
//     join, host → hub: {ready}; hub → host: one byte carrying the
//     master, then the pane's keeperConfig line; host → hub: {hostPid}.
//
// The connection is then the pane's channel (keeper.go: keeperQuit,
// keeperEnter, or end of file).
// Both ends also require the peer to run as the same user.

// ErrNoKeeper is wrapped by AdoptKeeper when no host listens or the one
// that does holds no such pane: the pane starts fresh.
var ErrNoKeeper = errors.New("no keeper holds the pane")

// ErrKeeperRefused is wrapped by AdoptKeeper when a keeper listens but
// the two do not trust each other (another user, root or secret), or the
// keeper did not hand the pane over.
var ErrKeeperRefused = errors.New("the pane's keeper and this hub do not trust each other")

// keeperHandshakeWait bounds each step of the handshake.
const keeperHandshakeWait = 10 * time.Second

// What a hub asks of a pane host.
const (
	opAdopt = "adopt" // hand the pane over
	opJoin  = "join"  // take the pane in
)

// keeperHello is the hub's first line; keeperProof the answers.
// Protocol and Version are the sender's pane protocol (PaneProtocol) and
// hm version; a build from before they were sent sends neither.
type keeperHello struct {
	Op       string `json:"op"`
	Pane     string `json:"pane"`
	Root     string `json:"root"`
	Nonce    string `json:"nonce"`
	Protocol string `json:"protocol,omitempty"`
	Version  string `json:"version,omitempty"`
}

type keeperProof struct {
	Nonce    string `json:"nonce,omitempty"`
	MAC      string `json:"mac,omitempty"`
	Refused  string `json:"refused,omitempty"`
	None     string `json:"none,omitempty"`
	Ready    bool   `json:"ready,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Version  string `json:"version,omitempty"`
}

// keeperHandOver is the line that follows the master.
type keeperHandOver struct {
	Pid       int       `json:"pid"`
	Mark      string    `json:"mark"`
	Started   time.Time `json:"started"`
	Env       []string  `json:"env"`
	KeeperPid int       `json:"keeperPid"`
	Output    int       `json:"output"`
}

// adoptReq is an authenticated connection of a new hub.
type adoptReq struct {
	conn *net.UnixConn
	rd   *bufio.Reader
}

// keeperMAC is the proof of side ("keeper" or "hub") that it knows secret.
func keeperMAC(secret, side string, h keeperHello, keeperNonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	for _, s := range []string{side, h.Nonce, keeperNonce, h.Pane, h.Root, h.Op} {
		fmt.Fprintf(m, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// newNonce returns 16 random bytes, hex encoded.
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeLine sends v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v.
func readLine(rd *bufio.Reader, v any) error {
	b, err := rd.ReadBytes('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// authenticate runs the host's side of steps 1–3 and returns the hello,
// or false when the hub is not trusted or asks for a pane the host does
// not hold (the caller closes the connection).
func (h *paneHost) authenticate(c *net.UnixConn) (keeperHello, *bufio.Reader, bool) {
	_ = c.SetDeadline(time.Now().Add(keeperHandshakeWait))
	rd := bufio.NewReader(c)
	var hello keeperHello
	if uid, err := peerUID(c); err != nil || uid != os.Getuid() {
		return hello, nil, false
	}
	if err := readLine(rd, &hello); err != nil {
		return hello, nil, false
	}
	if hello.Root != h.root {
		_ = writeLine(c, keeperProof{Refused: fmt.Sprintf("this pane host holds panes of root %s", h.root)})
		return hello, nil, false
	}
	if err := CheckPaneProtocol(hello.Protocol, hello.Version, "the hub", "the pane host"); err != nil {
		_ = writeLine(c, keeperProof{Refused: err.Error()})
		return hello, nil, false
	}
	switch {
	case hello.Op == opAdopt && h.pane(hello.Pane) == nil:
		_ = writeLine(c, keeperProof{None: fmt.Sprintf("this pane host holds no pane %q", hello.Pane)})
		return hello, nil, false
	case hello.Op != opAdopt && hello.Op != opJoin:
		_ = writeLine(c, keeperProof{Refused: fmt.Sprintf("unknown request %q", hello.Op)})
		return hello, nil, false
	}
	nonce := newNonce()
	if writeLine(c, keeperProof{Nonce: nonce, MAC: keeperMAC(h.secret, "keeper", hello, nonce), Protocol: PaneProtocol(), Version: buildinfo.Version()}) != nil {
		return hello, nil, false
	}
	var p keeperProof
	if readLine(rd, &p) != nil || !hmac.Equal([]byte(p.MAC), []byte(keeperMAC(h.secret, "hub", hello, nonce))) {
		return hello, nil, false
	}
	if hello.Op == opAdopt {
		clearDeadline(c)
	}
	return hello, rd, true
}

// clearDeadline lifts c's deadline once a handshake is through.
func clearDeadline(c *net.UnixConn) { _ = c.SetDeadline(time.Time{}) }

// handOver runs step 4: the master, the program's pid and out.
func (r *adoptReq) handOver(master *os.File, cfg keeperConfig, out []byte) error {
	_ = r.conn.SetWriteDeadline(time.Now().Add(keeperHandshakeWait))
	defer r.conn.SetWriteDeadline(time.Time{})
	if err := sendFD(r.conn, master); err != nil {
		return err
	}
	if err := writeLine(r.conn, keeperHandOver{Pid: cfg.Pid, Mark: cfg.Mark, Started: cfg.Started, Env: cfg.Env, KeeperPid: os.Getpid(), Output: len(out)}); err != nil {
		return err
	}
	_, err := r.conn.Write(out)
	return err
}

// sendFD sends one byte carrying f's descriptor.
func sendFD(c *net.UnixConn, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	err = rc.Control(func(fd uintptr) {
		_, _, sendErr = c.WriteMsgUnix([]byte{0}, unix.UnixRights(int(fd)), nil)
	})
	if err == nil {
		err = sendErr
	}
	return err
}

// Adoption is a pane a keeper handed to this hub.
type Adoption struct {
	// Master is the pane's PTY master (non-blocking, close-on-exec).
	Master *os.File
	// Pid is the program's pid (also its process group and session).
	Pid int
	// Mark is the run's RunMarkEnv value, Started when it started.
	Mark    string
	Started time.Time
	// Env is the environment the program was started with (by the hub
	// before: its HM_TOKEN, HM_PORT).
	Env []string
	// KeeperPid is the keeper's pid.
	KeeperPid int
	// Output is what the program wrote while no hub read it.
	Output []byte
	conn   *net.UnixConn
	rd     *bufio.Reader // conn's reader, past the hand-over
}

// keeper is the adopted keeper as this hub's keeper.
func (a *Adoption) keeper() *keeper {
	return newKeeper(a.KeeperPid, a.conn, a.rd, true)
}

// Release gives the pane back to its keeper without using it, as if this
// hub were gone: the keeper holds the terminal for its grace again.
func (a *Adoption) Release() {
	a.Master.Close()
	a.conn.Close()
}

// KeeperDial names the pane host and the pane a hub tries to adopt.
type KeeperDial struct {
	Socket, Root, Pane, Secret string
}

// AdoptKeeper connects to the pane host at d.Socket and takes its pane
// d.Pane over. ErrNoKeeper: nobody listens there (a socket file left
// behind is removed) or the host holds no such pane; ErrKeeperRefused: a
// host listens, but not for this hub.
func AdoptKeeper(ctx context.Context, d KeeperDial) (*Adoption, error) {
	conn, err := dialHost(ctx, d.Socket)
	if err != nil {
		return nil, fmt.Errorf("adopt pane %s: %w", d.Pane, err)
	}
	a, err := adoptOn(ctx, conn, d)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("adopt pane %s from %s: %w", d.Pane, d.Socket, err)
	}
	return a, nil
}

// dialHost connects to the pane host at path: ErrNoKeeper when nobody
// listens there (a socket file left behind is removed).
func dialHost(ctx context.Context, path string) (*net.UnixConn, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(path)
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (%s)", ErrNoKeeper, path)
		}
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// handshake runs the hub's side of steps 1–3 on conn for op, with conn's
// deadline set.
func handshake(conn *net.UnixConn, d KeeperDial, op string) (*bufio.Reader, error) {
	if uid, err := peerUID(conn); err != nil || uid != os.Getuid() {
		return nil, fmt.Errorf("%w: the pane host runs as another user (uid %d, %v)", ErrKeeperRefused, uid, err)
	}
	hello := keeperHello{Op: op, Pane: d.Pane, Root: d.Root, Nonce: newNonce(), Protocol: PaneProtocol(), Version: buildinfo.Version()}
	if err := writeLine(conn, hello); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(conn)
	var p keeperProof
	if err := readLine(rd, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeeperRefused, err)
	}
	switch {
	case p.None != "":
		return nil, fmt.Errorf("%w: %s", ErrNoKeeper, p.None)
	case p.Refused != "":
		return nil, fmt.Errorf("%w: %s", ErrKeeperRefused, p.Refused)
	}
	if err := CheckPaneProtocol(p.Protocol, p.Version, "the pane host", "this hub"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeeperRefused, err)
	}
	switch {
	case !hmac.Equal([]byte(p.MAC), []byte(keeperMAC(d.Secret, "keeper", hello, p.Nonce))):
		return nil, fmt.Errorf("%w: the pane host does not know this root's pane secret", ErrKeeperRefused)
	}
	if err := writeLine(conn, keeperProof{MAC: keeperMAC(d.Secret, "hub", hello, p.Nonce)}); err != nil {
		return nil, err
	}
	if rd.Buffered() != 0 {
		return nil, fmt.Errorf("%w: the pane host sent more than its proof", ErrKeeperRefused)
	}
	return rd, nil
}

// adoptOn runs the hub's side of an adoption on conn.
func adoptOn(ctx context.Context, conn *net.UnixConn, d KeeperDial) (*Adoption, error) {
	deadline := time.Now().Add(keeperHandshakeWait + keeperAdoptWait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	rd, err := handshake(conn, d, opAdopt)
	if err != nil {
		return nil, err
	}
	master, err := receiveFD(conn, rd)
	if err != nil {
		return nil, err
	}
	var h keeperHandOver
	out, err := func() ([]byte, error) {
		if err := readLine(rd, &h); err != nil {
			return nil, err
		}
		out := make([]byte, h.Output)
		_, err := io.ReadFull(rd, out)
		return out, err
	}()
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("read the hand-over: %w", err)
	}
	clearDeadline(conn)
	return &Adoption{Master: master, Pid: h.Pid, Mark: h.Mark, Started: h.Started, Env: h.Env, KeeperPid: h.KeeperPid, Output: out, conn: conn, rd: rd}, nil
}

// joinHost hands master, the pane cfg describes, to the root's running
// pane host (cfg.Socket). An error: no host, one that does not trust this
// hub or is ending; the caller starts a new one.
func joinHost(master *os.File, cfg keeperConfig) (*keeper, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keeperHandshakeWait)
	defer cancel()
	conn, err := dialHost(ctx, cfg.Socket)
	if err != nil {
		return nil, err
	}
	kp, err := func() (*keeper, error) {
		_ = conn.SetDeadline(time.Now().Add(keeperHandshakeWait))
		rd, err := handshake(conn, KeeperDial{Socket: cfg.Socket, Root: cfg.Root, Pane: cfg.Pane, Secret: cfg.Secret}, opJoin)
		if err != nil {
			return nil, err
		}
		var p keeperProof
		if err := readLine(rd, &p); err != nil || !p.Ready {
			return nil, fmt.Errorf("%w: the pane host did not take the pane (%v)", ErrKeeperRefused, err)
		}
		if err := sendFD(conn, master); err != nil {
			return nil, err
		}
		line := cfg
		line.Secret, line.Socket = "", "" // the host has both
		if err := writeLine(conn, line); err != nil {
			return nil, err
		}
		var j keeperJoined
		if err := readLine(rd, &j); err != nil {
			return nil, fmt.Errorf("the pane host did not take the pane: %w", err)
		}
		clearDeadline(conn)
		return newKeeper(j.HostPid, conn, rd, true), nil
	}()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("join the pane host %s: %w", cfg.Socket, err)
	}
	return kp, nil
}

// receiveFD reads the byte that carries a pane's master, nothing
// having been read past what rd holds.
func receiveFD(conn *net.UnixConn, rd *bufio.Reader) (*os.File, error) {
	if rd.Buffered() != 0 {
		return nil, fmt.Errorf("%w: more than the hand-over was sent", ErrKeeperRefused)
	}
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	// The received descriptor has no close-on-exec until it is set below:
	// ForkLock keeps a process started meanwhile (another pane's program)
	// from inheriting this pane's master, which would keep its terminal
	// from ever hanging up.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	_, oobn, _, _, err := conn.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, fmt.Errorf("%w: the pane was not handed over (its hub still runs?): %v", ErrKeeperRefused, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("%w: no terminal in the hand-over", ErrKeeperRefused)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("%w: no terminal in the hand-over", ErrKeeperRefused)
	}
	fd := fds[0]
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("hand-over: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: the hand-over is not a terminal", ErrKeeperRefused)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// End ends the handed-over pane instead of running it: the program's
// process group is killed and the keeper told to quit.
func (a *Adoption) End() {
	_ = signalGroup(a.Pid, syscall.SIGKILL)
	a.Master.Close()
	a.keeper().stop()
}
