package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// adoptOrSpawn starts the pane's first run: the program a keeper of an
// earlier hub still holds for the pane when one is there and trusted
// (keeper_adopt.go), else a fresh one.
func (p *Pane) adoptOrSpawn(ctx context.Context) (*proc, error) {
	k := p.spec.Keeper
	if k == nil || k.SocketDir == "" {
		return p.spawn(p.spec.Command)
	}
	a, err := adoptKeeper(ctx, k, p.spec.Role)
	switch {
	case errors.Is(err, ErrNoKeeper):
		p.log.Debug("no pane host holds the pane: starting its program fresh", "err", err)
		return p.spawn(p.spec.Command)
	case err != nil:
		p.log.Warn("the pane's keeper was not adopted: starting its program fresh", "err", err)
		return p.spawn(p.spec.Command)
	}
	return p.adopt(a), nil
}

// adoptKeeper asks the root's pane host for the pane role. None there:
// a keeper of an hm from before the pane host (pane protocol 1, one per
// pane, on the pane's own socket keeperSocketBeforeHost) may hold it; it
// is asked too, so that it is refused naming both builds' versions and
// protocols (CheckPaneProtocol) instead of being silently not found.
func adoptKeeper(ctx context.Context, k *Keeper, role string) (*Adoption, error) {
	d := KeeperDial{Socket: HostSocket(k.SocketDir), Root: k.Root, Pane: role, Secret: k.Secret}
	a, err := AdoptKeeper(ctx, d)
	if !errors.Is(err, ErrNoKeeper) {
		return a, err
	}
	d.Socket = keeperSocketBeforeHost(k.SocketDir, role)
	if st, serr := os.Lstat(d.Socket); serr != nil || st.Mode().Type() != os.ModeSocket {
		return nil, err // none ever listened there (nor could: a path too long)
	}
	if a, err2 := AdoptKeeper(ctx, d); !errors.Is(err2, ErrNoKeeper) {
		return a, err2
	}
	return nil, err
}

// keeperSocketBeforeHost is where the keeper of pane role listened in an
// hm from before the pane host (pane protocol 1).
func keeperSocketBeforeHost(dir, role string) string {
	return filepath.Join(dir, role+".sock")
}

// adopt makes the run a keeper handed over the pane's current one. Its
// screen is rebuilt as it was: hm's notice first, then the run's screen
// tail (what the hub before read, screen_tail.go), then the output the
// host buffered while no hub read it; together they are all the program
// wrote, so that attach, the readiness and the echo checks see the
// program's screen and not a blank one. Its terminal gets the pane's size
// once its output is read (redrawAdopted).
func (p *Pane) adopt(a *Adoption) *proc {
	pr := adoptedProc(a)
	if on := p.spec.OnAdopt; on != nil {
		on(a.Env)
	}
	p.mu.Lock()
	p.adopted, p.origin = true, OriginAdopted
	p.mu.Unlock()
	p.install(pr)
	// The program is past its start: it wrote its screen under the hub
	// before, so no start-up wait holds messages back.
	p.mu.Lock()
	p.sawOutput = true
	p.mu.Unlock()
	p.notice("adopted the running program from the pane host; not restarted")
	replayed := p.restoreScreen(pr)
	if len(a.Output) > 0 {
		p.handleOutput(pr, a.Output)
	}
	p.log.Info("pane program adopted from the pane host", "pid", pr.pid, "keeper", a.KeeperPid, "replayed", replayed, "buffered", len(a.Output), "started", pr.startedAt)
	return pr
}

// restoreScreen replays the adopted run's screen tail into the pane's
// terminal, drawn at the size the program drew it (the terminal's), and
// starts the run's own tail with it; it returns the bytes replayed. The
// replay is the program's past output: it goes to the terminal and the
// replay buffer, not to the pane log (which has it), the line callbacks
// (which saw it) or viewers (none yet), and the answers the terminal
// would give to queries in it were given before. Readiness is judged on
// the rebuilt screen as on any: it shows what the program drew last, busy
// or at its prompt, and the quiet period counts from the program's last
// output as the tail recorded it (now when it did not; output the host
// buffered counts from now too).
func (p *Pane) restoreScreen(pr *proc) int {
	k := p.spec.Keeper
	if k == nil || k.SocketDir == "" {
		return 0
	}
	tail, err := readScreenTail(screenTailPath(k.SocketDir, p.spec.Role))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Warn("the adopted program's screen tail is unreadable: its screen starts blank", "err", err)
	}
	replay := tail.replayable()
	pr.tail = p.openScreenTail(pr, replay, tail.at)
	if len(replay) == 0 {
		return 0
	}
	now := time.Now()
	last := tail.at
	if last.IsZero() || last.After(now) {
		last = now
	}
	p.vtMu.Lock()
	defer p.vtMu.Unlock()
	cols, rows := p.vt.Size()
	dc, dr, drawn := winsize(pr.master)
	if drawn {
		p.vt.Resize(int(dc), int(dr))
	}
	p.vt.Write(replay)
	p.vt.Replies()
	if drawn {
		p.vt.Resize(cols, rows)
	}
	p.mu.Lock()
	p.ring.Write(replay)
	p.lastOutput = last
	p.bracketed = p.vt.BracketedPaste()
	p.mu.Unlock()
	return len(replay)
}

// openScreenTail starts run pr's screen tail, seeded with seed, output
// that came at at, when its keeper can hand it to a next hub; nil
// otherwise or when it cannot be created (a hub that adopts the run then
// rebuilds no screen).
func (p *Pane) openScreenTail(pr *proc, seed []byte, at time.Time) *screenTail {
	k := p.spec.Keeper
	if k == nil || k.SocketDir == "" || pr.keeper == nil || !pr.keeper.adoptable {
		return nil
	}
	t, err := createScreenTail(screenTailPath(k.SocketDir, p.spec.Role), ScreenTailBytes, seed, at)
	if err != nil {
		p.log.Warn("no screen tail: a hub that adopts this program after a crash starts its screen blank", "err", err)
		return nil
	}
	return t
}

// redrawAdopted gives an adopted run's terminal the pane's size and makes
// its program draw its screen again: the size is changed first (a row
// less) when it is that size already, and given back once the program
// drew for the change, or after adoptRedrawWait (a program that does not
// redraw). The rebuilt screen may be wrong where the program draws only
// what changed: output the killed hub read and never put into the screen
// tail is lost, and every later change then lands on the wrong cells (a
// loaded run of the real-CLI suite saw Claude Code's input row rebuilt as
// its banner's, and each message typed after it "did not show" until it
// was reported stuck). Node programs redraw only for a size they have not
// drawn for, so the two sizes are not set back to back. Not on a
// canonical terminal: whatever reads it draws no screen. The reader must
// run (outChanged); the caller holds no lock.
func (p *Pane) redrawAdopted(pr *proc) {
	p.mu.Lock()
	cols, rows, out := p.cols, p.rows, p.outChanged
	p.mu.Unlock()
	if c, r, ok := winsize(pr.master); ok && c == cols && r == rows && rows > 1 && !pr.canonical() {
		if err := setWinsize(pr.master, cols, rows-1); err != nil {
			p.log.Warn("adopted pane not redrawn", "err", err)
		} else if !p.pauseOutput(pr, adoptRedrawWait, out, nil, nil) {
			return
		}
		p.mu.Lock()
		cols, rows = p.cols, p.rows // attach may have resized it meanwhile
		p.mu.Unlock()
	}
	if err := setWinsize(pr.master, cols, rows); err != nil {
		p.log.Warn("adopted pane keeps its old size", "err", err)
	}
}

// adoptRedrawWait bounds how long an adopted program is given to draw for
// the smaller size before its size is given back.
const adoptRedrawWait = time.Second

// clearAdopted erases the adopted program's input before the first
// message is typed: a hub killed between a message's text and its Enter
// left the text there, and the message, not entered, is typed again in
// full (the entered log and the ledger decide), which would submit it
// twice in one prompt.
//
// A terminal in canonical mode holds the input in the kernel: its kill
// character (VKILL, Ctrl-U by default) empties it, in order before what is
// typed next, with nothing on the screen to wait for. A program that reads
// raw input gets the profile's erase keys until its screen shows them
// change nothing (clearInput).
func (p *Pane) clearAdopted(pr *proc) {
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	if kill, ok := pr.killChar(); ok {
		if _, err := p.writeRaw(context.Background(), pr, []byte{kill}); err != nil {
			p.log.Warn("could not empty the adopted program's input", "err", err)
		}
		return
	}
	held, err := p.clearInput(pr)
	switch {
	case err != nil:
		p.log.Warn("could not see the adopted program's input emptied", "err", err)
	case held != "":
		p.log.Info("erased what the adopted program's input held", "held", held)
	}
}
