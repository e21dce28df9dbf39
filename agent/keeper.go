package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A pane's keeper keeps the pane's terminal open for a moment after the
// hub is gone. A hub killed with -9 closes its PTY masters with its other
// descriptors, and the kernel hangs the terminals up at once: every pane
// program gets SIGHUP, and a message whose Enter the hub had just written
// (and put in the entered log, so that it is never typed again) is lost
// if the program had not read it yet. The keeper is a small process in its
// own session holding a copy of the master and the read end of a pipe whose
// write end only the hub holds. While the hub lives it only waits; when the
// pipe reports end of file (the hub is gone), it reads and throws away the
// program's output for Keeper.Grace, so the program takes the input it
// already has, and then exits, which hangs the terminal up. A pane that
// ends normally kills its keeper.

// Keeper is how a pane starts its keeper process.
type Keeper struct {
	// Argv runs RunKeeper (Argv[0] is the executable's path), e.g. the hm
	// executable and "pane-keeper".
	Argv []string
	// Env is the keeper's environment (nil: none).
	Env []string
}

// KeeperCommand is the hm subcommand that runs RunKeeper (hidden from
// the command list).
const KeeperCommand = "pane-keeper"

// KeeperGrace is how long a keeper holds a pane's terminal after the hub
// is gone: long enough for a program to take input it already has.
const KeeperGrace = 2 * time.Second

// Descriptors a keeper is started with.
const (
	keeperMasterFD = 3
	keeperHubFD    = 4
)

// keeper is a running keeper process, owned by one proc.
type keeper struct {
	proc *os.Process
	pipe *os.File // the write end; closing it (or the hub's death) frees the keeper
	done chan struct{}
}

// startKeeper starts k's process for master. The descriptors are handed
// over raw (syscall.StartProcess): os/exec would put the master, whose
// open file description the keeper shares, in blocking mode.
func startKeeper(k *Keeper, master *os.File) (*keeper, error) {
	if len(k.Argv) == 0 {
		return nil, errors.New("pane keeper: no command")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pane keeper: pipe: %w", err)
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	defer null.Close()
	rc, err := master.SyscallConn()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("pane keeper: %w", err)
	}
	var pid int
	var startErr error
	err = rc.Control(func(mfd uintptr) {
		files := []uintptr{null.Fd(), null.Fd(), null.Fd(), mfd, r.Fd()}
		pid, startErr = syscall.ForkExec(k.Argv[0], k.Argv, &syscall.ProcAttr{
			Dir: "/", Env: k.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setsid: true},
		})
	})
	if err == nil {
		err = startErr
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("pane keeper: start %s: %w", k.Argv[0], err)
	}
	p, _ := os.FindProcess(pid) // cannot fail on Unix
	kp := &keeper{proc: p, pipe: w, done: make(chan struct{})}
	go func() {
		defer close(kp.done)
		_, _ = p.Wait()
	}()
	return kp, nil
}

// stop ends the keeper at once and reaps it.
func (k *keeper) stop() {
	_ = k.proc.Kill()
	k.pipe.Close()
	<-k.done
}

// RunKeeper is the body of a keeper process (see Keeper): descriptor 3 is
// the pane's PTY master, 4 the read end of the hub's pipe. It returns once
// the hub is gone and grace has passed; the caller then exits.
func RunKeeper(grace time.Duration) error {
	for _, d := range []struct {
		fd   int
		mode uint32
	}{{keeperMasterFD, unix.S_IFCHR}, {keeperHubFD, unix.S_IFIFO}} {
		var st unix.Stat_t
		if err := unix.Fstat(d.fd, &st); err != nil || uint32(st.Mode)&unix.S_IFMT != d.mode {
			return fmt.Errorf("pane keeper: descriptor %d is not the pane's terminal and the hub's pipe: the hub starts this command itself, beside each pane program", d.fd)
		}
	}
	master := os.NewFile(keeperMasterFD, "pty-master")
	hub := os.NewFile(keeperHubFD, "hub")
	_, _ = io.Copy(io.Discard, hub) // until the hub is gone
	go func() {
		// The program's output, so that it never blocks writing; ends
		// with the process.
		_, _ = io.Copy(io.Discard, master)
	}()
	time.Sleep(grace)
	return nil
}
