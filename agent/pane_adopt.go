package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// adopt makes the run a keeper handed over the pane's current one: the
// terminal is resized to the pane's size (the program redraws) and the
// output buffered while no hub read it rebuilds the screen.
func (p *Pane) adopt(a *Adoption) *proc {
	pr := adoptedProc(a)
	if on := p.spec.OnAdopt; on != nil {
		on(a.Env)
	}
	p.mu.Lock()
	cols, rows := p.cols, p.rows
	p.adopted, p.origin = true, OriginAdopted
	p.mu.Unlock()
	p.install(pr)
	// The program is past its start: it wrote its screen under the hub
	// before, so no start-up wait holds messages back.
	p.mu.Lock()
	p.sawOutput = true
	p.mu.Unlock()
	if len(a.Output) > 0 {
		p.handleOutput(pr, a.Output)
	}
	if err := setWinsize(pr.master, cols, rows); err != nil {
		p.log.Warn("adopted pane keeps its old size", "err", err)
	}
	p.log.Info("pane program adopted from its keeper", "pid", pr.pid, "keeper", a.KeeperPid, "buffered", len(a.Output), "started", pr.startedAt)
	p.notice("adopted the running program from its keeper; not restarted")
	return pr
}

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
