package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// proc is one run of a pane's program.
type proc struct {
	cmd       *exec.Cmd // nil when adopted from a keeper (not this hub's child)
	master    *os.File  // PTY master, non-blocking and registered with the runtime poller
	ttyPath   string    // the terminal's slave side, e.g. /dev/pts/3 (see unread)
	pid       int       // also the process group id (the child is a session leader)
	startedAt time.Time

	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // valid after exited is closed
	// unreadAtClose is how many bytes hm wrote that the program never
	// read, asked as the run's master closed (-1: unknown); valid once
	// closed is closed.
	unreadAtClose int
	closed        chan struct{}
	readerDone    chan struct{} // closed when the output reader stopped
	scan          termScanner   // owned by the reader goroutine

	replies     chan []byte   // terminal answers to type back; closed by the reader
	repliesDone chan struct{} // closed when replyLoop ended

	keeper    *keeper // holds the terminal for a moment after the hub's death (keeper.go)
	keeperErr error   // why no keeper runs, if one was asked for
	adopted   bool    // the run was handed over by the keeper of an earlier hub
	// tail keeps the run's newest output for a hub that adopts it
	// (screen_tail.go); nil without an adoptable keeper. Written under
	// the pane's vtMu.
	tail *screenTail

	// mark is this run's value of RunMarkEnv in the program's
	// environment, which its descendants inherit: those that left the
	// pane's session (a daemon that called setsid) are found by it.
	mark string
	// env is the program's environment (handed to an adopting hub).
	env []string
}

// RunMarkEnv is the variable each pane run gets with a value of its own, so
// that at Stop hm finds every process the run started, also those that left
// its session and process group (Codex's app-server daemons): see strays.
const RunMarkEnv = "HM_PANE_RUN"

// newRunMark returns a fresh value for RunMarkEnv.
func newRunMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// strays returns the running processes of pr that a signal to its process
// group does not reach: the other groups of its session, and (on Linux)
// every process carrying its run mark, wherever it moved; never the hub.
func strays(pr *proc) []int {
	out := sessionProcs(pr.pid)
	for _, pid := range markedProcs(RunMarkEnv + "=" + pr.mark) {
		if pid != os.Getpid() && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// openPTY opens a PTY pair sized cols x rows. The master is returned in
// non-blocking mode so that reads and writes go through the runtime poller:
// Close then interrupts a blocked Read and write deadlines work.
func openPTY(cols, rows uint16) (master, tty *os.File, err error) {
	m, t, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	// pty.Open used m.Fd(), which put the descriptor in blocking mode; a
	// fresh non-blocking duplicate is pollable again.
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err != nil {
		t.Close()
		return nil, nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		t.Close()
		return nil, nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := setWinsize(master, cols, rows); err != nil {
		master.Close()
		t.Close()
		return nil, nil, err
	}
	return master, t, nil
}

// setWinsize sets the terminal size without switching f to blocking mode.
func setWinsize(f *os.File, cols, rows uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize pty: %w", err)
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return fmt.Errorf("resize pty to %dx%d: %w", cols, rows, err)
	}
	return nil
}

// winsize is the terminal's size, asked without switching f to blocking
// mode; ok is false when it cannot be asked or is not set.
func winsize(f *os.File) (cols, rows uint16, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var ws *unix.Winsize
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ws, ioErr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	}); err != nil || ioErr != nil {
		return 0, 0, false
	}
	return ws.Col, ws.Row, ws.Col > 0 && ws.Row > 0
}

// startProc runs "/bin/sh -c command" (spec's Command, or its resume
// form) in its own session and process group with a fresh PTY as
// controlling terminal.
func startProc(spec *Spec, command string, cols, rows uint16) (*proc, error) {
	if spec.Dir != "" {
		if st, err := os.Stat(spec.Dir); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("working directory %s: not a directory", spec.Dir)
		}
	}
	defaultHangupForChildren()
	master, tty, err := openPTY(cols, rows)
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	cmd := exec.Command(shellPath, "-c", command)
	cmd.Dir = spec.Dir
	mark := newRunMark()
	env := append(childEnv(spec.Env), RunMarkEnv+"="+mark)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, fmt.Errorf("start %s -c %q: %w", shellPath, command, err)
	}
	pr := &proc{
		cmd:        cmd,
		master:     master,
		ttyPath:    tty.Name(),
		pid:        cmd.Process.Pid,
		startedAt:  time.Now(),
		exited:     make(chan struct{}),
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),

		replies:     make(chan []byte, replyQueue),
		repliesDone: make(chan struct{}),
		mark:        mark,
		env:         env,
	}
	if spec.Keeper != nil {
		pr.keeper, pr.keeperErr = startKeeper(spec.Keeper, pr, spec.Role, spec.EnteredLog)
	}
	return pr, nil
}

// replyQueue bounds the terminal answers waiting to be typed back.
const replyQueue = 64

// shellPath runs pane commands.
const shellPath = "/bin/sh"

// childEnv returns env (or the hub's environment when nil) with TERM set
// when missing, so full-screen programs can draw.
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "TERM=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "TERM=xterm-256color")
}

// errAdoptedExit is the wait error of an adopted run: its exit status
// went to its parent, which this hub is not.
var errAdoptedExit = errors.New("ended; its exit status is unknown (adopted from a keeper, it was not this hub's child)")

// wait blocks until the run's program has exited: a child is reaped, an
// adopted program is watched (waitGone).
func (pr *proc) wait() error {
	if pr.cmd != nil {
		return pr.cmd.Wait()
	}
	waitGone(pr.pid)
	return errAdoptedExit
}

// adoptedProc is the run a keeper handed over in a.
func adoptedProc(a *Adoption) *proc {
	return &proc{
		master:     a.Master,
		ttyPath:    slaveName(a.Master),
		pid:        a.Pid,
		startedAt:  a.Started,
		exited:     make(chan struct{}),
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),

		replies:     make(chan []byte, replyQueue),
		repliesDone: make(chan struct{}),
		keeper:      a.keeper(),
		adopted:     true,
		mark:        a.Mark,
		env:         a.Env,
	}
}

// running reports whether pr's program still runs and holds its terminal:
// not waited for, its output not ended (every holder of the terminal
// closed it), and, for the hub's own child, not ended either (asked
// without reaping it: the wait may not have returned yet).
func (pr *proc) running() bool {
	if pr.isExited() {
		return false
	}
	select {
	case <-pr.readerDone:
		return false
	default:
	}
	return pr.cmd == nil || childRunning(pr.pid)
}

// isExited reports whether the process has been reaped.
func (pr *proc) isExited() bool {
	select {
	case <-pr.exited:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to the process group; a group that is gone is not an
// error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("signal group %d: invalid process group", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal group %d with %v: %w", pgid, sig, err)
	}
	return nil
}

// describeExit explains how a program ended, for Status.LastError.
func describeExit(err error, lastLine string) (code int, msg string) {
	code = 0
	var ee *exec.ExitError
	switch {
	case err == nil:
		msg = "exited with code 0"
	case errors.As(err, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			code = -1
			msg = fmt.Sprintf("killed by signal %v", ws.Signal())
		default:
			code = ee.ExitCode()
			msg = fmt.Sprintf("exited with code %d", code)
			switch code {
			case 127:
				msg += " (command not found)"
			case 126:
				msg += " (command not executable)"
			}
		}
	default:
		code = -1
		msg = "wait: " + err.Error()
	}
	if lastLine != "" {
		msg += ": " + lastLine
	}
	return code, msg
}

// killChar is the kill character (VKILL) of the run's terminal when the
// terminal is in canonical mode and has one.
func (pr *proc) killChar() (byte, bool) {
	rc, err := pr.master.SyscallConn()
	if err != nil {
		return 0, false
	}
	var c byte
	ok := false
	_ = rc.Control(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios); err == nil && t.Lflag&unix.ICANON != 0 {
			c = t.Cc[unix.VKILL]
			ok = c != 0 && c != 0xff // _POSIX_VDISABLE
		}
	})
	return c, ok
}

// canonical reports whether the run's terminal is in canonical (cooked)
// mode: the kernel edits lines and the program has not switched to raw
// input yet. The attributes are read through the master, which on Linux
// and the BSDs reports the terminal's (the slave's) settings; an error
// (the run ended) reads as not canonical, so the caller's other waits
// decide. Control keeps the master non-blocking (Fd would not).
func (pr *proc) canonical() bool {
	rc, err := pr.master.SyscallConn()
	if err != nil {
		return false
	}
	canon := false
	_ = rc.Control(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios); err == nil {
			canon = t.Lflag&unix.ICANON != 0
		}
	})
	return canon
}

// goneInterval is how often pollGone looks.
const goneInterval = 100 * time.Millisecond

// pollGone returns once pid is no longer alive (procAlive), the portable
// way to watch a process this hub is not the parent of.
func pollGone(pid int) {
	for procAlive(pid) {
		time.Sleep(goneInterval)
	}
}
