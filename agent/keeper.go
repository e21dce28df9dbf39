package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hm/internal/ground/layout"
)

// A pane's keeper keeps the pane's terminal open after the hub is gone.
// A hub killed with -9 closes its PTY masters with its other descriptors,
// and without a keeper the kernel hangs the terminals up at once: every
// pane program gets SIGHUP, and a message whose Enter the hub had just
// written (and put in the entered log, so that it is never typed again) is
// lost if the program had not read it yet.
//
// The keeper is one small process in its own session, the pane host
// (keeper_host.go): one per root holds a copy of every pane's master, each
// beside a unix connection whose other end only the hub holds (its
// channel). While the hub lives the host only waits; when a pane's channel
// reports end of file (the hub is gone), it reads that program's output
// into a bounded ring, so the program never blocks and takes the input it
// already has, for Keeper.Grace, and then closes the master, which hangs
// the terminal up. A pane that ends normally is dropped from the host;
// the host exits once it holds no pane.
//
// The hub starts the host with the root's first pane (forkKeeper); every
// later pane joins it over the root's socket (HostSocket), handing its
// master over (SCM_RIGHTS). Without Keeper.SocketDir each pane has a host
// of its own, which no later pane joins and no next hub adopts.
//
// With Keeper.SocketDir set, a pane whose hub is gone can be adopted
// (keeper_adopt.go): a new hub of the same root and user that proves it
// knows the root's pane secret gets the master (SCM_RIGHTS), the program's
// pid and the buffered output, and its unix connection becomes the pane's
// channel.

// Keeper is how a pane starts its keeper, or joins the root's pane host.
type Keeper struct {
	// Argv runs RunKeeper (Argv[0] is the executable's path), e.g. the hm
	// executable and "pane-keeper".
	Argv []string
	// Env is the keeper's environment (nil: none).
	Env []string
	// SocketDir, when set, is where the root's pane host listens for its
	// next panes and for a new hub, at HostSocket(SocketDir) (mode 0600).
	// Empty: each pane has a keeper of its own that cannot be adopted.
	SocketDir string
	// Root is the coordination root the pane belongs to; a hub of another
	// root is refused.
	Root string
	// Secret proves a hub to the host and the host to a hub (see
	// keeper_adopt.go); never in argv or the environment.
	Secret string
	// Grace is how long the keeper holds the terminal after the hub is
	// gone (0: KeeperGrace).
	Grace time.Duration
	// RingBytes bounds the output buffered while no hub reads it (0:
	// KeeperRingBytes).
	RingBytes int
}

// KeeperCommand is the hm subcommand that runs RunKeeper (hidden from
// the command list).
const KeeperCommand = "pane-keeper"

// KeeperGrace is how long a keeper holds a pane's terminal after the hub
// is gone when Keeper.Grace is not set: long enough for a program to take
// input it already has.
const KeeperGrace = 2 * time.Second

// KeeperRingBytes is the output a keeper buffers by default while no hub
// reads it: the newest bytes, from which an adopting hub rebuilds the
// screen.
const KeeperRingBytes = 256 << 10

// A pane's channel carries lines from the hub to the host while the hub
// owns the pane (keeper_run.go: serveHub):
//
//   - "q" (keeperQuit) drops the pane from the host at once (the pane
//     stopped); end of file instead means the hub is gone. The host
//     answers by closing the channel once it closed the pane's master.
//   - "e <id>" (keeperEnter) presses Enter for message id: the host writes
//     the CR into the pane's terminal and then records id in the pane's
//     entered log, and answers one line: "ok" (both done; "ok <error>"
//     when only the record failed), "busy" (the terminal took no input
//     within keeperEnterSlice: nothing done, ask again) or "failed
//     <error>" (nothing done). The host is not killed with the hub, so a
//     kill -9 of the hub cannot fall between the Enter and its record:
//     the host does both once it has the line, or neither.
const (
	keeperQuit  = "q"
	keeperEnter = "e"
)

// The host's answers to keeperEnter.
const (
	enterDone   = "ok"
	enterBusy   = "busy"
	enterFailed = "failed"
)

// keeperEnterSlice is how long the host waits for the terminal to take
// an Enter before it answers enterBusy; keeperEnterWait how long the hub
// waits for an answer before it takes the Enter as pressed (the host has
// the line and does it, or is wedged: the text left at the input is then
// entered again by the delivery's next press).
const (
	keeperEnterSlice = 100 * time.Millisecond
	keeperEnterWait  = 10 * time.Second
)

// keeperQuitWait bounds how long a hub waits for a pane's host told to
// drop the pane. A host that does not answer is killed, and one host holds
// every pane of the root: the bound is generous, so that a host merely
// slow on a loaded machine does not take the other panes' crash
// protection with it.
const keeperQuitWait = 10 * time.Second

// Descriptors a host is started with.
const (
	keeperMasterFD = 3 // the first pane's master
	keeperHubFD    = 4 // its channel
	keeperListenFD = 5 // the listening socket, with keeperConfig.Socket
)

// HostSocket is where the pane host listens whose socket directory
// (Keeper.SocketDir, layout.PaneSocketDir) is dir.
func HostSocket(dir string) string { return filepath.Join(dir, layout.PaneHostSocketName) }

// keeperConfig is what the hub tells the host about a pane, as the first
// line on its channel (a pane that joins sends it after its master).
type keeperConfig struct {
	Pane      string        `json:"pane"`
	Root      string        `json:"root"`
	Pid       int           `json:"pid"`
	Mark      string        `json:"mark"`    // the run's RunMarkEnv value
	Started   time.Time     `json:"started"` // when the program started
	Env       []string      `json:"env"`     // the program's environment
	Socket    string        `json:"socket,omitempty"`
	Secret    string        `json:"secret,omitempty"`
	Grace     time.Duration `json:"grace"`
	RingBytes int           `json:"ringBytes"`
	// Entered is the pane's entered log (Spec.EnteredLog), to which the
	// host appends the messages it presses Enter for (keeperEnter).
	Entered string `json:"entered,omitempty"`
}

// keeper is a pane's place in a pane host as its hub sees it, owned by
// one proc: the host a child of this hub (proc set), or one it joined or
// adopted the pane from (pid only).
type keeper struct {
	proc *os.Process // nil unless this pane's start forked the host
	pid  int
	// chMu serializes the pane's requests on ch (an Enter and its
	// answer, the quit); rd reads the host's answers.
	chMu sync.Mutex
	ch   *net.UnixConn // the pane's channel; closing it (or the hub's death) frees the pane
	rd   *bufio.Reader
	// adoptable: the host listens for a next hub (Keeper.SocketDir).
	adoptable bool
	done      chan struct{} // closed once the child is reaped (nil unless proc)
}

// hostStarts serializes, per socket path, the panes of this hub joining
// or starting their root's host, so that two panes never start two.
var hostStarts struct {
	sync.Mutex
	paths map[string]*sync.Mutex
}

// hostStart is the lock of the host at path.
func hostStart(path string) *sync.Mutex {
	hostStarts.Lock()
	defer hostStarts.Unlock()
	if hostStarts.paths == nil {
		hostStarts.paths = map[string]*sync.Mutex{}
	}
	mu := hostStarts.paths[path]
	if mu == nil {
		mu = &sync.Mutex{}
		hostStarts.paths[path] = mu
	}
	return mu
}

// startKeeper puts the run pr of the pane role's program in a pane host:
// the root's running one when it trusts this hub, else a new one.
func startKeeper(k *Keeper, pr *proc, role, entered string) (*keeper, error) {
	if len(k.Argv) == 0 {
		return nil, errors.New("pane keeper: no command")
	}
	cfg := keeperConfig{Pane: role, Root: k.Root, Pid: pr.pid, Mark: pr.mark, Started: pr.startedAt, Env: pr.env, Secret: k.Secret, Grace: k.Grace, RingBytes: k.RingBytes, Entered: entered}
	if k.SocketDir == "" {
		return forkKeeper(k, pr.master, cfg, nil)
	}
	if k.Secret == "" {
		return nil, errors.New("pane keeper: a socket without a secret")
	}
	cfg.Socket = HostSocket(k.SocketDir)
	mu := hostStart(cfg.Socket)
	mu.Lock()
	defer mu.Unlock()
	kp, err := joinHost(pr.master, cfg)
	if err == nil {
		return kp, nil
	}
	// No host, or one this hub does not trust: a new one takes the path.
	ln, err := listenKeeper(cfg.Socket)
	if err != nil {
		return nil, err
	}
	defer ln.ln.Close() // the host's copy listens on; the path stays
	lf, err := ln.ln.File()
	if err != nil {
		ln.close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	defer lf.Close()
	kp, err = forkKeeper(k, pr.master, cfg, lf)
	if err != nil {
		ln.close()
	}
	return kp, err
}

// forkKeeper starts a host holding master, with the first line of the
// pane's channel cfg and, when listen is set, that listening socket.
// The descriptors are handed over raw (syscall.ForkExec): os/exec would
// put the master, whose open file description the host shares, in
// blocking mode.
func forkKeeper(k *Keeper, master *os.File, cfg keeperConfig, listen *os.File) (*keeper, error) {
	line, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	// The socket holds the line until the host reads it (far below its
	// buffer).
	if _, err := ours.Write(append(line, '\n')); err != nil {
		ours.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	defer null.Close()
	files := []*os.File{null, null, null, master, theirs}
	if listen != nil {
		files = append(files, listen)
	}
	pid, err := forkExecFiles(k, files)
	if err != nil {
		ours.Close()
		return nil, err
	}
	p, _ := os.FindProcess(pid) // cannot fail on Unix
	kp := newKeeper(pid, ours, nil, cfg.Socket != "")
	kp.proc, kp.done = p, make(chan struct{})
	go func() {
		defer close(kp.done)
		_, _ = p.Wait()
	}()
	return kp, nil
}

// forkExecFiles starts k's command in a session of its own with files as
// its descriptors 0, 1, ….
func forkExecFiles(k *Keeper, files []*os.File) (int, error) {
	fds := make([]uintptr, len(files))
	var conns []syscall.RawConn
	for i, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			return 0, fmt.Errorf("pane keeper: %w", err)
		}
		conns = append(conns, rc)
		_ = rc.Control(func(fd uintptr) { fds[i] = fd })
	}
	// The descriptors stay open: files are held by the caller until the
	// child has its copies.
	pid, err := syscall.ForkExec(k.Argv[0], k.Argv, &syscall.ProcAttr{
		Dir: "/", Env: k.Env, Files: fds,
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	runtime.KeepAlive(conns)
	if err != nil {
		return 0, fmt.Errorf("pane keeper: start %s: %w", k.Argv[0], err)
	}
	return pid, nil
}

// socketPair returns the two ends of a connected unix stream socket, the
// hub's as a connection, the other as a file to hand over.
func socketPair() (*net.UnixConn, *os.File, error) {
	// ForkLock: no program started meanwhile inherits an end before it
	// is close-on-exec (macOS has no SOCK_CLOEXEC).
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("pane keeper: socketpair: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "hub-channel")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("pane keeper: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "keeper-channel"), nil
}

// newKeeper is the pane's place in host pid, reached over ch, whose
// answers rd reads (nil: a new reader of ch).
func newKeeper(pid int, ch *net.UnixConn, rd *bufio.Reader, adoptable bool) *keeper {
	if rd == nil {
		rd = bufio.NewReader(ch)
	}
	return &keeper{pid: pid, ch: ch, rd: rd, adoptable: adoptable}
}

// errEnterNotAsked: the host could not be asked to press Enter (its
// channel is gone); nothing was pressed or recorded.
var errEnterNotAsked = errors.New("the pane host could not be asked")

// enter asks the host to press Enter for message id and record it
// (keeperEnter). errEnterNotAsked: the request did not reach the host;
// an error wrapping os.ErrDeadlineExceeded: the terminal took no input
// yet (ask again); another error: the host pressed nothing. A nil error
// with a non-empty note: pressed, but the note says what went wrong
// after the request (no answer, or the record failed). fault, when set,
// runs between the request and its answer (Spec.FaultAtEnter).
func (k *keeper) enter(id string, fault func()) (note string, err error) {
	k.chMu.Lock()
	defer k.chMu.Unlock()
	defer k.ch.SetDeadline(time.Time{})
	_ = k.ch.SetDeadline(time.Now().Add(keeperEnterWait))
	if _, err := k.ch.Write([]byte(keeperEnter + " " + id + "\n")); err != nil {
		return "", fmt.Errorf("%w: %w", errEnterNotAsked, err)
	}
	if fault != nil {
		fault()
	}
	line, err := k.rd.ReadString('\n')
	if err != nil {
		// The host has the line: it presses and records, or it died
		// with the pane's terminal still held by this hub. Taken as
		// pressed; a text left at the input is pressed again.
		return fmt.Sprintf("no answer from the pane host: %v", err), nil
	}
	word, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	switch word {
	case enterDone:
		return rest, nil
	case enterBusy:
		return "", fmt.Errorf("press enter: %w", os.ErrDeadlineExceeded)
	default:
		return "", fmt.Errorf("press enter (pane host): %s", rest)
	}
}

// stop drops the pane from its host: the host closes its master, then
// the channel. A host that does not answer within keeperQuitWait is
// killed (and reaped, when it is this hub's child).
func (k *keeper) stop() {
	k.chMu.Lock()
	defer k.chMu.Unlock()
	defer k.ch.Close()
	_ = k.ch.SetDeadline(time.Now().Add(keeperQuitWait))
	_, err := k.ch.Write([]byte(keeperQuit + "\n"))
	if err == nil {
		_, err = io.Copy(io.Discard, k.rd)
	}
	if err == nil {
		return
	}
	if k.proc != nil {
		select {
		case <-k.done:
			return
		default:
		}
		_ = k.proc.Kill()
		<-k.done
		return
	}
	if procAlive(k.pid) {
		_ = unix.Kill(k.pid, unix.SIGKILL)
	}
}
