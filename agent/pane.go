package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hm/agent/internal/vterm"
	"hm/roles"
)

// Errors reported by panes.
var (
	// ErrInvalidSpec is returned by Start for a Spec that cannot describe a pane.
	ErrInvalidSpec = errors.New("invalid pane spec")
	// ErrNotRunning is returned by Write and WriteContext while no program runs.
	ErrNotRunning = errors.New("pane program not running")
	// ErrPaneExited is carried by a Stage when the program exited after the
	// message text was typed but before its submission was seen.
	ErrPaneExited = errors.New("pane program exited")
	// ErrStopped is carried by a Stage when the pane was stopped after the
	// message text was typed.
	ErrStopped = errors.New("pane stopped")
	// ErrNoPointerDir is carried by a StageFailed when a message must go to a
	// pointer file but the pane has no PointerDir.
	ErrNoPointerDir = errors.New("message needs a pointer file but the pane has no pointer directory")
	// ErrStuck is wrapped by a StageStuck's Err.
	ErrStuck = errors.New("message stuck")
)

// Defaults applied by Start to zero Spec fields.
const (
	// DefaultMinBackoff is the first restart delay.
	DefaultMinBackoff = time.Second
	// DefaultMaxBackoff caps the doubling restart delay.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultKillGrace is the time between SIGHUP and SIGKILL on Stop.
	DefaultKillGrace = 3 * time.Second
	// DefaultStartupWait bounds the wait for a fresh program's first output.
	DefaultStartupWait = 3 * time.Second
	// DefaultRingBytes is the replay buffer size.
	DefaultRingBytes = 64 * 1024
	// DefaultCols and DefaultRows are the initial terminal size.
	DefaultCols = 120
	DefaultRows = 40
	// DefaultLogMaxBytes is the pane log size that triggers rotation.
	DefaultLogMaxBytes = 32 << 20
	// MaxReplay is the most output an attach replays.
	MaxReplay = 64 * 1024
	// DefaultPersonQuiet is how long after a person's last key in attach
	// hm waits before it types.
	DefaultPersonQuiet = 3 * time.Second
)

const (
	drainTimeout   = 500 * time.Millisecond // output drain after the program exited
	writeSlice     = 100 * time.Millisecond // write deadline between exit/stop checks
	subscriberBuf  = 256                    // output chunks buffered per subscriber
	readBufferSize = 32 * 1024
)

// Spec describes a pane and the program it hosts.
type Spec struct {
	// Role, PaneID and Header identify the pane (e.g. "architect", "1", "ARCH").
	Role, PaneID, Header string
	// Command runs as "/bin/sh -c Command" in Dir, in its own session and
	// process group, with the pane's PTY as controlling terminal.
	Command string
	// Profile names the timing profile (see ProfileFor). Empty: inferred from
	// Command by roles.InferProfile, so a shell gets the "shell" profile. An
	// explicit profile is used as given, except that "default" on a command
	// inferred as an interactive shell becomes "shell" (SPEC §6: message
	// text is never typed into a shell).
	Profile string
	// Timing overrides the profile's durations and markers field by field
	// (zero fields keep the profile's value).
	Timing Profile
	// Profiles extends the built-in profile table (settings.json
	// "profiles", see ProfilesFromSettings); an entry named like a built-in
	// profile overrides it field by field.
	Profiles map[string]Profile
	// Dir is the working directory ("" = the hub's).
	Dir string
	// Env is the complete environment of the program (nil = the hub's).
	// TERM=xterm-256color is added when missing.
	Env []string
	// EnteredLog, when set, is a file to which the id of each message is
	// appended once its first Enter is written (see ReadEntered): by the
	// pane's host where it has one, which a kill -9 of the hub does not
	// stop between the Enter and the record (pressEnter), else by the
	// pane right after the Enter's write.
	EnteredLog string
	// FaultAtEnter, for the e2e fault suite only, runs when a message's
	// first Enter has left this process and nothing has recorded it in
	// the hub: after the host was asked (before its answer), or after the
	// raw write (before the entered log's record).
	FaultAtEnter func()
	// Keeper, when set, puts each run of the program in a pane host
	// (keeper.go: the root's, one for all its panes, when Keeper.SocketDir
	// is set), so that the program's terminal stays open for
	// KeeperGrace after a hub killed with -9, and the program takes the
	// input it already has (the Enter the entered log recorded).
	Keeper *Keeper
	// OnAdopt, when set, is called with the adopted program's environment
	// (what the hub before gave it) when the pane adopts its program from
	// a keeper instead of starting it, before any message is typed.
	OnAdopt func(env []string)
	// LogPath, when set, receives all pane output (appended; directory
	// created 0700, file 0600), written in batches: about 50 ms behind
	// output that keeps coming, at most 1 s behind output that stopped,
	// complete once the program exited or the pane stopped (pane_log.go).
	// LogMaxBytes rotates it to LogPath+".1" (default 32 MiB; negative =
	// never).
	LogPath     string
	LogMaxBytes int64
	// logDelay, set only by tests, replaces logDelay for the pane log
	// (its timer waits logQuietFactor times as long).
	logDelay time.Duration
	// PointerDir receives bodies that are not typed inline, as
	// <PointerDir>/<messageId>.txt (0600).
	PointerDir string
	// Restart restarts the program whenever it exits, after a backoff that
	// starts at MinBackoff and doubles up to MaxBackoff (defaults 1 s, 30 s);
	// a run that lasted at least MaxBackoff resets the backoff.
	Restart                bool
	MinBackoff, MaxBackoff time.Duration
	// KillGrace is the time between SIGHUP and SIGKILL on Stop (default 3 s).
	KillGrace time.Duration
	// StartupWait bounds how long a fresh program may stay silent before
	// messages are typed anyway (default 3 s). Within it, urgent messages too
	// wait for the program to go idle once, so that it can finish starting
	// (e.g. switch bracketed paste on).
	StartupWait time.Duration
	// PersonQuiet is how long hm waits after a person's last key in attach
	// before it types a message, urgent ones included (default 3 s). A
	// line the person left half typed holds messages until they press
	// Enter, Ctrl-C or Ctrl-U (or the program restarts).
	PersonQuiet time.Duration
	// RingBytes is the size of the replay buffer (default 64 KiB).
	RingBytes int
	// Cols and Rows are the initial terminal size (default 120x40).
	Cols, Rows uint16
	// OnLine is called with each output line, ANSI-stripped and without
	// trailing blanks. Calls are made in order on a goroutine of the pane
	// (not the PTY reader); they must not block for long.
	OnLine func(line string)
	// OnExit is called each time the program ends (or fails to start, with
	// code -1), on the same goroutine as OnLine. code is -1 for a signal.
	OnExit func(code int, err error)
}

// Status is a snapshot of a pane.
type Status struct {
	Role, PaneID, Header string
	Command              string
	Profile              string
	// PID of the program's process group leader; 0 while not running.
	PID int
	// State is the pane's liveness: starting, ready, busy,
	// waiting_for_human or exited (see State and Pane.Status).
	State State
	// Queued counts messages not yet finished, the one being typed included.
	Queued int
	// LastActivity is the time of the last output or input.
	LastActivity time.Time
	// StartedAt is when the current (or last) run started.
	StartedAt time.Time
	// Restarts counts restarts since Start, resumed ones included.
	Restarts int
	// Resumes counts the restarts that resumed the CLI's session
	// (OriginResumed).
	Resumes int
	// Origin is how the current (or last) program came to be: started,
	// adopted, restarted or resumed (OriginWords says it in words).
	Origin Origin
	// Adopted reports that the pane's first run was not started by this
	// hub but handed over by the keeper of an earlier one (keeper.go);
	// it stays true after that run ends.
	Adopted bool
	// LastError explains the last exit or start failure ("" if none yet).
	LastError string
	// BracketedPaste reports whether the program has bracketed paste on.
	BracketedPaste bool
	// Cols and Rows are the terminal size the program has now (the last
	// resize, else Spec's).
	Cols, Rows int
	// Readiness classifies the pane's screen by its profile's markers
	// ("ready", "busy", "blocked", "not ready"), with the marker that
	// decided, e.g. "blocked: Do you want to proceed?".
	Readiness string
	// Drift, when set, warns that hm typed into the pane on the unmarked
	// wait: its profile's markers may no longer match the CLI's screen.
	Drift *Drift
	// Waiting says why a message waits for someone, not for the program:
	// WaitingForPerson ("waiting for the person in attach") while a person
	// in attach typed within PersonQuiet or left a line half typed; ""
	// otherwise.
	Waiting string
}

// Pane hosts one program in a PTY and delivers messages into it.
type Pane struct {
	spec    Spec
	profile Profile
	log     *slog.Logger
	disp    *dispatcher
	// afterInput, set only by tests, runs after bytes written through
	// writeInput reached the terminal (to widen a race window).
	afterInput atomic.Pointer[func()]

	stopCh     chan struct{} // closed by requestStop
	leave      atomic.Bool   // set by Leave: the stop leaves the program to its keeper
	stopOnce   sync.Once
	stopped    chan struct{} // closed once the program is gone and the pane's goroutines ended
	done       chan struct{} // closed after stopped, once callbacks have drained
	releaseCtx func() bool

	// Lock order: a goroutine that holds one of the Pane's locks takes only
	// locks listed after it, never one listed before:
	//
	//	inputMu  the input: a message's text and its Enter, a viewer's keys
	//	writeMu  one write into the PTY (writeRaw, pressEnter)
	//	vtMu     vt, the virtual terminal
	//	mu       the run and the fields listed under it
	//	qmu      the queue and the fields listed under it
	//	logMu    the pane log (paneLog.mu)
	//
	// In practice: inputMu, then writeMu or vtMu (never both), then mu; qmu
	// and logMu are taken with none of the others held. Two locks of the
	// pane's helpers come last: the entered log's (taken under writeMu, by the
	// first Enter's record) and the callback dispatcher's (report, under
	// inputMu); nothing is taken under either. A function named …Locked, or
	// whose comment says the caller holds a lock, runs with that lock held.
	//
	// inputMu serialises the writers of input: a message's text and its
	// Enter, a viewer's keys, WriteContext. writeMu serialises single
	// writes into the PTY (writeRaw, pressEnter), the terminal's answers
	// to queries included, which take writeMu alone: they may go in
	// between a message's text and its Enter, never inside either.
	inputMu sync.Mutex
	writeMu sync.Mutex
	// entered is the last message whose Enter hm pressed, and the program
	// run it went to; guarded by inputMu (held.go).
	lastEntered enteredText
	queued      queuedPrompt // guarded by mu
	// heldLooked is the output signal current when the idle pane last
	// looked at its input for it (idleWait); owned by deliverLoop.
	heldLooked chan struct{}

	// vtMu guards vt, the pane's virtual terminal.
	vtMu sync.Mutex
	vt   *vterm.Terminal

	// mu guards the fields below, down to typists (hookHeld, atomic, is
	// also read without it).
	mu          sync.Mutex
	proc        *proc
	procChanged chan struct{} // closed and replaced whenever proc changes
	stopping    bool
	lastOutput  time.Time
	lastInput   time.Time
	typedAt     time.Time // hm's own typing (a message, an Enter) last reached the terminal
	person      personState
	waiting     string      // Status.Waiting
	hook        hookReport  // the ready or waiting state a CLI hook reported last
	turn        hookTurn    // the turn a CLI hook said runs
	turnHookAt  time.Time   // when a hook last said a turn began (held.go)
	hooked      bool        // the pane's program has reported through hooks (any run)
	drift       *Drift      // Status.Drift
	hookHeld    atomic.Bool // hook holds a report (read without mu by handleOutput)
	queueWatch  atomic.Bool // queued is armed (read without mu by handleOutput)
	readyRun    *proc       // the run Status last saw ready (it is past starting)
	startedAt   time.Time
	outChanged  chan struct{} // closed and replaced on every output chunk
	sawOutput   bool          // the current run has written something
	bracketed   bool
	restarts    int
	resumes     int    // restarts that resumed the CLI session
	origin      Origin // Status.Origin
	session     string // the CLI session the program's hooks reported last (ReportSession)
	runReported bool   // the current run's hooks reported a session
	adopted     bool   // the first run was handed over by a keeper
	lastError   string
	cols, rows  uint16
	ring        *ring
	subs        map[*subscription]struct{}
	subsClosed  bool
	typists     int // attached viewers that may type (their terminal answers queries)

	// qmu guards queue, qseq, qjump, qafter and interrupting.
	qmu   sync.Mutex
	queue []*item
	qseq  uint64 // the last item's seq
	qwake chan struct{}
	qjump chan struct{} // closed (and replaced) when an urgent message becomes the head
	// qafter, once set by closeQueue (FailQueued, ForwardQueued), is what
	// becomes of every later Enqueue and Unclaim, at once.
	qafter func(Delivery)
	// interrupting is the urgent message whose interrupt keys hm sent and
	// whose delivery has not ended: the turn they cancelled may still run
	// its hooks, whose output the program drops (Claim).
	interrupting *item
	// lastInterrupt is when hm last typed the interrupt keys (interruptGap).
	lastInterrupt time.Time

	// plog, the pane log, and entered, the entered log, have locks of
	// their own (plog's is logMu in the order above).
	plog    *paneLog
	entered *enteredLog
}

// Start launches the pane's program and its delivery engine. A program that
// cannot start does not make Start fail: the pane reports state "exited" with
// LastError explaining why, shows the reason in its output, and, with
// Restart, keeps retrying with backoff. Start fails only for an invalid Spec.
// Cancelling ctx stops the pane as Stop does.
func Start(ctx context.Context, spec Spec, logger *slog.Logger) (*Pane, error) {
	if strings.TrimSpace(spec.Command) == "" {
		return nil, fmt.Errorf("start pane %q: empty command: %w", spec.Role, ErrInvalidSpec)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	applyDefaults(&spec)
	profile, shell := spec.profile()
	if shell {
		logger.Info("pane runs an interactive shell: using the shell profile", "pane", spec.PaneID, "command", spec.Command, "profile", spec.Profile)
	}
	p := &Pane{
		spec:        spec,
		profile:     profile,
		log:         logger.With("pane", spec.PaneID, "role", spec.Role),
		stopCh:      make(chan struct{}),
		stopped:     make(chan struct{}),
		done:        make(chan struct{}),
		procChanged: make(chan struct{}),
		outChanged:  make(chan struct{}),
		person:      personState{changed: make(chan struct{})},
		cols:        spec.Cols,
		rows:        spec.Rows,
		ring:        newRing(spec.RingBytes),
		vt:          vterm.New(int(spec.Cols), int(spec.Rows)),
		subs:        make(map[*subscription]struct{}),
		origin:      OriginStarted,
		qwake:       make(chan struct{}, 1),
		qjump:       make(chan struct{}),
	}
	p.disp = newDispatcher(p.log)
	p.plog = openPaneLog(spec.LogPath, spec.LogMaxBytes, spec.logDelay, p.log)
	if el, err := openEnteredLog(spec.EnteredLog); err != nil {
		p.log.Warn("no entered log: a kill -9 right after an Enter may type that message again", "err", err)
	} else {
		p.entered = el
	}

	p.releaseCtx = context.AfterFunc(ctx, p.requestStop)
	pr, err := p.adoptOrSpawn(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go p.disp.run()
	go func() { defer wg.Done(); p.supervise(pr, err) }()
	go func() {
		defer wg.Done()
		if pr != nil && pr.adopted {
			p.redrawAdopted(pr)
			p.clearAdopted(pr)
		}
		p.deliverLoop()
	}()
	go func() {
		wg.Wait()
		p.mu.Lock()
		p.subsClosed = true
		for s := range p.subs {
			s.close("pane stopped")
			delete(p.subs, s)
		}
		p.mu.Unlock()
		p.plog.close()
		if err := p.entered.close(); err != nil {
			p.log.Warn("close entered log", "err", err)
		}
		close(p.stopped)
		p.disp.close()
		<-p.disp.done
		close(p.done)
	}()
	return p, nil
}

// profile is the profile a pane of s types with: Profile, else the one
// Command implies (roles.InferProfile), from Profiles or the built-ins,
// with Timing over it. shell reports that Command is an interactive shell
// and Profile a name that falls back to default, which becomes the shell
// profile: message text is never typed into a shell as a command.
func (s Spec) profile() (p Profile, shell bool) {
	name := s.Profile
	inferred := roles.InferProfile(s.Command)
	switch {
	case name == "":
		name = inferred
	case inferred == ProfileShell && isDefaultProfile(name, s.Profiles):
		name, shell = ProfileShell, true
	}
	return lookupProfile(name, s.Profiles).withOverrides(s.Timing), shell
}

// SameRun reports whether a pane of spec s runs its program as a pane of
// o does: the same role, pane id and header, command, profile as resolved
// (Profile, the Profiles entry it names, Timing), directory and
// environment (in any order). What else a spec holds (keeper, restarts,
// callbacks, log paths, sizes) needs no new program. hm reload restarts a
// pane whose new spec is not SameRun as its old one.
func (s Spec) SameRun(o Spec) bool {
	if s.Role != o.Role || s.PaneID != o.PaneID || s.Header != o.Header || s.Command != o.Command || s.Dir != o.Dir {
		return false
	}
	sp, _ := s.profile()
	op, _ := o.profile()
	if !reflect.DeepEqual(sp, op) {
		return false
	}
	se, oe := slices.Clone(s.Env), slices.Clone(o.Env)
	slices.Sort(se)
	slices.Sort(oe)
	return slices.Equal(se, oe)
}

// applyDefaults fills zero fields of spec.
func applyDefaults(s *Spec) {
	if s.MinBackoff <= 0 {
		s.MinBackoff = DefaultMinBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.MaxBackoff < s.MinBackoff {
		s.MaxBackoff = s.MinBackoff
	}
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}
	if s.StartupWait <= 0 {
		s.StartupWait = DefaultStartupWait
	}
	if s.PersonQuiet <= 0 {
		s.PersonQuiet = DefaultPersonQuiet
	}
	if s.RingBytes <= 0 {
		s.RingBytes = DefaultRingBytes
	}
	if s.Cols == 0 {
		s.Cols = DefaultCols
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	if s.LogMaxBytes == 0 {
		s.LogMaxBytes = DefaultLogMaxBytes
	}
	if s.logDelay <= 0 {
		s.logDelay = logDelay
	}
	if s.PointerDir != "" {
		if abs, err := filepath.Abs(s.PointerDir); err == nil {
			s.PointerDir = abs
		}
	}
}

// name identifies the pane in errors.
func (p *Pane) name() string {
	if p.spec.Role != "" {
		return p.spec.Role
	}
	return p.spec.PaneID
}

// Profile returns the timing the pane uses.
func (p *Pane) Profile() Profile { return p.profile }

// Spec returns the spec the pane was started with, defaults applied.
func (p *Pane) Spec() Spec { return p.spec }

// Done is closed once the pane has stopped (after Stop or the Start context
// was cancelled) and its callbacks have run; a callback must therefore not
// wait for Done itself.
func (p *Pane) Done() <-chan struct{} { return p.done }

// requestStop begins stopping the pane; it does not wait.
func (p *Pane) requestStop() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopping = true
		p.mu.Unlock()
		close(p.stopCh)
	})
}

// Stop ends the program (SIGHUP to its process group, SIGKILL after
// KillGrace, default 3 s), waits until it and the pane's goroutines are gone,
// and closes all subscriptions. Messages still queued stay undelivered (see
// Undelivered). Stop is idempotent and safe to call from the pane's
// callbacks; it returns ctx's error if ctx ends first (the pane keeps
// stopping in the background).
func (p *Pane) Stop(ctx context.Context) error {
	p.requestStop()
	select {
	case <-p.stopped:
		if p.releaseCtx != nil {
			p.releaseCtx()
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop pane %s: %w", p.name(), ctx.Err())
	}
}

// Leave ends the pane as Stop does, except that a program whose keeper
// listens for a next hub (Keeper.SocketDir) is not ended: it is left to
// the keeper, as if this hub had died, for the next hub on the root to
// adopt. The caller then exits: the goroutine that would reap the program
// stays until then. A pane without such a keeper stops.
func (p *Pane) Leave(ctx context.Context) error {
	p.leave.Store(true)
	return p.Stop(ctx)
}

// Status returns a snapshot of the pane.
func (p *Pane) Status() Status {
	readiness, marker := p.profile.Classify(p.Screen())
	p.qmu.Lock()
	queued := len(p.queue)
	p.qmu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{
		Role:           p.spec.Role,
		PaneID:         p.spec.PaneID,
		Header:         p.spec.Header,
		Command:        p.spec.Command,
		Profile:        p.profile.Name,
		Queued:         queued,
		StartedAt:      p.startedAt,
		Restarts:       p.restarts,
		Resumes:        p.resumes,
		Origin:         p.origin,
		Adopted:        p.adopted,
		LastError:      p.lastError,
		BracketedPaste: p.bracketed,
		Cols:           int(p.cols),
		Rows:           int(p.rows),
		LastActivity:   p.lastOutput,
		Readiness:      readiness.String(),
		Waiting:        p.waiting,
	}
	if marker != "" && readiness != Ready {
		st.Readiness += ": " + marker
	}
	if p.lastInput.After(st.LastActivity) {
		st.LastActivity = p.lastInput
	}
	switch pr := p.proc; {
	case pr == nil || pr.isExited():
		st.State = StateExited
		if pr == nil && p.startedAt.IsZero() {
			st.State = StateStarting
		}
	default:
		st.State, st.PID = p.judgeLocked(pr, readiness, marker, time.Now()).state, pr.pid
	}
	if p.stopping && p.proc == nil {
		st.State = StateExited
	}
	if p.drift != nil {
		d := *p.drift
		st.Drift = &d
	}
	return st
}

// Replay returns the recent output held in the replay buffer.
func (p *Pane) Replay() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ring.Tail(-1)
}
