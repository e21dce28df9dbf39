package agent

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// spawn starts one run of the program, command (the pane's, or its
// resume form), and records it as current.
func (p *Pane) spawn(command string) (*proc, error) {
	p.mu.Lock()
	cols, rows := p.cols, p.rows
	p.mu.Unlock()
	pr, err := startProc(&p.spec, command, cols, rows)
	if err != nil {
		return nil, err
	}
	pr.tail = p.openScreenTail(pr, nil, time.Time{})
	p.install(pr)
	p.log.Info("pane program started", "pid", pr.pid, "command", command, "profile", p.profile.Name)
	if pr.keeperErr != nil {
		p.log.Warn("pane program runs without a keeper: a hub killed with -9 hangs its terminal up at once", "err", pr.keeperErr)
	}
	return pr, nil
}

// install makes pr the pane's current run.
func (p *Pane) install(pr *proc) {
	if p.spec.OnLine != nil {
		pr.scan.emit = func(line string) {
			on := p.spec.OnLine
			p.disp.post(func() { on(line) }, true)
		}
	}
	p.vtMu.Lock()
	p.vt.SoftReset() // a new program sets its own modes
	p.vtMu.Unlock()
	p.mu.Lock()
	p.proc = pr
	p.startedAt = pr.startedAt
	p.lastOutput = pr.startedAt
	p.sawOutput = false
	p.bracketed = false
	p.runReported = false
	close(p.procChanged)
	p.procChanged = make(chan struct{})
	p.mu.Unlock()
}

// supervise owns the program's lifecycle: it waits for each run to end,
// reports it, and restarts with backoff until the pane stops.
func (p *Pane) supervise(pr *proc, startErr error) {
	backoff := p.spec.MinBackoff
	for {
		if startErr != nil {
			msg := "cannot start: " + startErr.Error()
			p.mu.Lock()
			p.lastError = msg
			if p.startedAt.IsZero() {
				p.startedAt = time.Now()
			}
			p.mu.Unlock()
			p.log.Warn("pane program cannot start", "err", startErr)
			p.notice(msg)
			p.postExit(-1, startErr)
		} else {
			ran := p.runProc(pr)
			if ran >= p.spec.MaxBackoff {
				backoff = p.spec.MinBackoff
			}
		}
		select {
		case <-p.stopCh:
			return
		default:
		}
		if !p.spec.Restart {
			p.notice("program ended; not restarting")
			<-p.stopCh
			return
		}
		p.notice(fmt.Sprintf("restarting in %s", backoff))
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-p.stopCh:
			t.Stop()
			return
		}
		backoff = min(backoff*2, p.spec.MaxBackoff)
		command, origin := p.nextRun()
		if origin == OriginResumed {
			p.notice("resuming the CLI's session: " + command)
		}
		pr, startErr = p.spawn(command)
	}
}

// nextRun counts a restart and returns its command line and origin: the
// profile's Resume form with the CLI session the program's hooks reported
// (OriginResumed), else the pane's command (OriginRestarted). A resumed
// run that ended before its hooks reported a session did not get its
// CLI going (the session is gone, or the CLI refused the id): that
// session is forgotten, and the pane restarts blank.
func (p *Pane) nextRun() (string, Origin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.origin == OriginResumed && !p.runReported && p.session != "" {
		p.log.Warn("the resumed program ended before its hooks reported a session: restarting it blank", "session", p.session)
		p.session = ""
	}
	p.restarts++
	command, ok := resumeCommand(p.profile.Resume, p.spec.Command, p.session)
	if !ok {
		p.origin = OriginRestarted
		return p.spec.Command, p.origin
	}
	p.origin = OriginResumed
	p.resumes++
	p.log.Info("resuming the CLI session of the program that ended", "session", p.session)
	return command, p.origin
}

// ReportSession records the CLI session id the pane's program reported
// through its hooks (their input's session_id): when the program ends,
// hm resumes that session (Profile.Resume) instead of starting the CLI
// blank. An id that is not ValidSession is refused.
func (p *Pane) ReportSession(id string) error {
	if !ValidSession(id) {
		return fmt.Errorf("pane %s: CLI session id %.40q: not one word of letters, digits and ._:-", p.name(), id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session != id {
		p.log.Info("the program's CLI session", "session", id)
	}
	p.session = id
	if p.proc != nil {
		p.runReported = true
	}
	return nil
}

// runProc watches one run until it ends (stopping it when the pane stops)
// and returns how long it ran.
func (p *Pane) runProc(pr *proc) time.Duration {
	go p.readLoop(pr)
	go p.replyLoop(pr)
	go func() {
		pr.waitErr = pr.wait()
		close(pr.exited)
	}()
	select {
	case <-pr.exited:
		// Hang up what the program left behind, as a closing terminal
		// does, and end what ignores that: the next run gets a session
		// of its own, so nothing would find these again, not even Stop.
		p.killGroup(pr)
	case <-p.stopCh:
		if p.leave.Load() && pr.keeper != nil && pr.keeper.adoptable {
			p.leaveProc(pr)
			return time.Since(pr.startedAt)
		}
		p.killGroup(pr)
	}
	ran := time.Since(pr.startedAt)
	t := time.NewTimer(drainTimeout)
	select {
	case <-pr.readerDone:
	case <-t.C:
		p.log.Debug("pane output still open after exit; closing it", "pid", pr.pid)
	}
	t.Stop()
	p.closeMaster(pr)
	if pr.keeper != nil {
		pr.keeper.stop()
	}
	<-pr.readerDone
	<-pr.repliesDone
	pr.tail.close(true) // nothing left to adopt

	p.mu.Lock()
	last := lastLine(p.ring.Tail(2048))
	p.mu.Unlock()
	code, msg := describeExit(pr.waitErr, last)
	p.mu.Lock()
	p.proc = nil
	p.lastError = msg
	p.bracketed = false
	close(p.procChanged)
	p.procChanged = make(chan struct{})
	p.mu.Unlock()
	p.log.Info("pane program ended", "pid", pr.pid, "code", code, "ran", ran.Round(time.Millisecond), "detail", msg)
	p.notice("program " + msg)
	p.plog.flush() // the run's last output is in the log before OnExit
	p.postExit(code, pr.waitErr)
	return ran
}

// leaveProc lets go of a run without ending it (Leave): the hub's copy
// of the master and its channel to the keeper close, with no quit, so the
// keeper holds the terminal for the next hub as after the hub's death.
func (p *Pane) leaveProc(pr *proc) {
	pr.unreadAtClose = -1
	pr.master.Close()
	close(pr.closed)
	<-pr.readerDone
	<-pr.repliesDone
	pr.tail.close(false) // for the next hub
	pr.keeper.ch.Close()
	p.mu.Lock()
	p.proc = nil
	close(p.procChanged)
	p.procChanged = make(chan struct{})
	p.mu.Unlock()
	p.log.Info("pane program left to its keeper for the next hub", "pid", pr.pid, "keeper", pr.keeper.pid)
}

// killGroup stops a run, or ends what a run that ended left behind: SIGHUP
// to the process group and to whatever else of the pane's session still
// runs (descendants moved to groups of their own), SIGKILL to all of them
// once KillGrace passed and any still runs.
func (p *Pane) killGroup(pr *proc) {
	deadline := time.Now().Add(p.spec.KillGrace)
	// The session's other members are listed before the hang-up: once the
	// leader is gone, its orphans stay in the session and are found again.
	first := strays(pr)
	if err := signalGroup(pr.pid, syscall.SIGHUP); err != nil {
		p.log.Warn("hang up pane program", "err", err)
	}
	signalPids(first, syscall.SIGHUP)
	t := time.NewTimer(p.spec.KillGrace)
	select {
	case <-pr.exited:
	case <-t.C:
	}
	t.Stop()
	alive := func() bool { return groupAlive(pr.pid) || len(strays(pr)) > 0 }
	for alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if groupAlive(pr.pid) {
		p.log.Warn("pane program ignored SIGHUP; killing its process group", "pid", pr.pid)
		if err := signalGroup(pr.pid, syscall.SIGKILL); err != nil {
			p.log.Warn("kill pane program", "err", err)
		}
	}
	if left := strays(pr); len(left) > 0 {
		p.log.Warn("processes the pane's program started outlived it; killing them", "pid", pr.pid, "pids", left)
		signalPids(left, syscall.SIGKILL)
	}
	<-pr.exited
}

// signalPids sends sig to each of pids; those already gone are skipped.
func signalPids(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		if pid > 1 {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// postExit queues the OnExit callback.
func (p *Pane) postExit(code int, err error) {
	if on := p.spec.OnExit; on != nil {
		p.disp.post(func() { on(code, err) }, false)
	}
}

// lastLine returns the last non-empty ANSI-stripped line of out, shortened.
func lastLine(out []byte) string {
	var last string
	s := termScanner{emit: func(l string) {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "[hm] ") {
			last = strings.TrimSpace(l)
		}
	}}
	s.Write(out)
	s.endLine(false)
	if r := []rune(last); len(r) > 200 {
		last = string(r[:200]) + "…"
	}
	return last
}

// closeMaster closes the ended run's master, asking first how many of the
// bytes hm wrote the program never read: the terminal's input queue
// outlives the program while the master is open. writeMu is held across
// both, so an Enter written into the run is counted or fails to be written.
func (p *Pane) closeMaster(pr *proc) {
	p.writeMu.Lock()
	pr.unreadAtClose = pr.inputQueue()
	pr.master.Close()
	p.writeMu.Unlock()
	close(pr.closed)
}
