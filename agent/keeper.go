package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A pane's keeper keeps the pane's terminal open after the hub is gone.
// A hub killed with -9 closes its PTY masters with its other descriptors,
// and without a keeper the kernel hangs the terminals up at once: every
// pane program gets SIGHUP, and a message whose Enter the hub had just
// written (and put in the entered log, so that it is never typed again) is
// lost if the program had not read it yet. The keeper is a small process
// in its own session holding a copy of the master and the read end of a
// pipe whose write end only the hub holds. While the hub lives it only
// waits; when the pipe reports end of file (the hub is gone), it reads the
// program's output into a bounded ring, so the program never blocks and
// takes the input it already has, for Keeper.Grace, and then exits, which
// hangs the terminal up. A pane that ends normally stops its keeper.
//
// With Keeper.SocketDir set, a keeper whose hub is gone can be adopted
// (keeper_adopt.go): a new hub of the same root and user that proves it
// knows the root's pane secret gets the master (SCM_RIGHTS), the program's
// pid and the buffered output, and the keeper becomes that hub's keeper,
// its unix connection taking the place of the pipe.

// Keeper is how a pane starts its keeper process.
type Keeper struct {
	// Argv runs RunKeeper (Argv[0] is the executable's path), e.g. the hm
	// executable and "pane-keeper".
	Argv []string
	// Env is the keeper's environment (nil: none).
	Env []string
	// SocketDir, when set, is where a keeper whose hub is gone listens for
	// a new hub, at KeeperSocket(SocketDir, role) (mode 0600). Empty: the
	// keeper cannot be adopted.
	SocketDir string
	// Root is the coordination root the pane belongs to; a hub of another
	// root is refused.
	Root string
	// Secret proves a new hub (see keeper_adopt.go); the keeper gets it
	// over its pipe, never in argv or the environment.
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

// keeperQuit, written on the keeper's channel from the hub, ends the keeper
// at once (the pane stopped); end of file instead means the hub is gone.
const keeperQuit = 'q'

// keeperQuitWait bounds how long a hub waits for a keeper told to quit.
const keeperQuitWait = 2 * time.Second

// Descriptors a keeper is started with.
const (
	keeperMasterFD = 3
	keeperHubFD    = 4
)

// KeeperSocket is where the keeper of role's pane listens under dir.
func KeeperSocket(dir, role string) string { return filepath.Join(dir, role+".sock") }

// keeperConfig is what the hub tells a keeper it starts, as the first line
// on its pipe.
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
}

// keeper is a running keeper process as its hub sees it, owned by one
// proc: a child of this hub (proc set) or one adopted (pid only).
type keeper struct {
	proc *os.Process // nil when adopted: not this hub's child
	pid  int
	ch   io.WriteCloser // the pipe or the unix connection; closing it (or the hub's death) frees the keeper
	// adoptable: the keeper listens for a next hub (Keeper.SocketDir).
	adoptable bool
	done      chan struct{} // closed once the child is reaped (nil when adopted)
}

// startKeeper starts k's process for the run pr of the pane role's
// program. The descriptors are handed over raw
// (syscall.StartProcess): os/exec would put the master, whose open file
// description the keeper shares, in blocking mode.
func startKeeper(k *Keeper, pr *proc, role string) (*keeper, error) {
	if len(k.Argv) == 0 {
		return nil, errors.New("pane keeper: no command")
	}
	cfg := keeperConfig{Pane: role, Root: k.Root, Pid: pr.pid, Mark: pr.mark, Started: pr.startedAt, Env: pr.env, Secret: k.Secret, Grace: k.Grace, RingBytes: k.RingBytes}
	if k.SocketDir != "" {
		if k.Secret == "" {
			return nil, errors.New("pane keeper: a socket without a secret")
		}
		cfg.Socket = KeeperSocket(k.SocketDir, role)
	}
	line, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pane keeper: pipe: %w", err)
	}
	defer r.Close()
	// The pipe holds the line until the keeper reads it (far below the
	// pipe's capacity).
	if _, err := w.Write(append(line, '\n')); err != nil {
		w.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	kpid, err := forkKeeper(k, pr.master, r)
	if err != nil {
		w.Close()
		return nil, err
	}
	p, _ := os.FindProcess(kpid) // cannot fail on Unix
	kp := &keeper{proc: p, pid: kpid, ch: w, done: make(chan struct{}), adoptable: cfg.Socket != ""}
	go func() {
		defer close(kp.done)
		_, _ = p.Wait()
	}()
	return kp, nil
}

// forkKeeper starts the keeper process with master and the pipe's read
// end as descriptors 3 and 4 and returns its pid.
func forkKeeper(k *Keeper, master, pipe *os.File) (int, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, fmt.Errorf("pane keeper: %w", err)
	}
	defer null.Close()
	rc, err := master.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("pane keeper: %w", err)
	}
	var pid int
	var startErr error
	err = rc.Control(func(mfd uintptr) {
		files := []uintptr{null.Fd(), null.Fd(), null.Fd(), mfd, pipe.Fd()}
		pid, startErr = syscall.ForkExec(k.Argv[0], k.Argv, &syscall.ProcAttr{
			Dir: "/", Env: k.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setsid: true},
		})
	})
	if err == nil {
		err = startErr
	}
	if err != nil {
		return 0, fmt.Errorf("pane keeper: start %s: %w", k.Argv[0], err)
	}
	return pid, nil
}

// stop ends the keeper (it removes its socket) and, when it is this hub's
// child, reaps it; one that does not go within keeperQuitWait is killed.
func (k *keeper) stop() {
	_, _ = k.ch.Write([]byte{keeperQuit})
	k.ch.Close()
	if k.proc != nil {
		t := time.NewTimer(keeperQuitWait)
		defer t.Stop()
		select {
		case <-k.done:
		case <-t.C:
			_ = k.proc.Kill()
			<-k.done
		}
		return
	}
	deadline := time.Now().Add(keeperQuitWait)
	for procAlive(k.pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if procAlive(k.pid) {
		_ = unix.Kill(k.pid, unix.SIGKILL)
	}
}

// RunKeeper is the body of a keeper process (see Keeper): descriptor 3 is
// the pane's PTY master, 4 the read end of the hub's pipe, whose first
// line is the keeperConfig. It returns once the pane stopped, or the hub
// is gone and grace passed without a new hub adopting the pane; the
// caller then exits.
func RunKeeper() error {
	for _, d := range []struct {
		fd   int
		mode uint32
	}{{keeperMasterFD, unix.S_IFCHR}, {keeperHubFD, unix.S_IFIFO}} {
		var st unix.Stat_t
		if err := unix.Fstat(d.fd, &st); err != nil || uint32(st.Mode)&unix.S_IFMT != d.mode {
			return fmt.Errorf("pane keeper: descriptor %d is not the pane's terminal and the hub's pipe: the hub starts this command itself, beside each pane program", d.fd)
		}
	}
	// The master is non-blocking (the hub's open file description), so
	// os.NewFile registers it with the poller and read deadlines work.
	master := os.NewFile(keeperMasterFD, "pty-master")
	hub := os.NewFile(keeperHubFD, "hub")
	rd := bufio.NewReader(hub)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("pane keeper: read the hub's configuration: %w", err)
	}
	var cfg keeperConfig
	if err := json.Unmarshal(line, &cfg); err != nil {
		return fmt.Errorf("pane keeper: the hub's configuration: %w", err)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = KeeperGrace
	}
	if cfg.RingBytes <= 0 {
		cfg.RingBytes = KeeperRingBytes
	}
	kr := &keeperRun{cfg: cfg, master: master, reqs: make(chan *adoptReq)}
	if cfg.Socket != "" {
		ln, err := listenKeeper(cfg.Socket)
		if err != nil {
			// Runs on as a keeper that cannot be adopted.
			fmt.Fprintln(os.Stderr, err)
		} else {
			defer ln.close()
			go kr.serve(ln.ln)
		}
	}
	kr.run(rd, hub)
	return nil
}
