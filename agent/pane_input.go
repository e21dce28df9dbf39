package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Write types b into the pane as if from the keyboard. It blocks while the
// program does not read its input and fails with ErrNotRunning when no
// program runs.
func (p *Pane) Write(b []byte) (int, error) {
	return p.WriteContext(context.Background(), b)
}

// WriteContext is Write with a context that can abandon a blocked write.
func (p *Pane) WriteContext(ctx context.Context, b []byte) (int, error) {
	return p.writeInput(ctx, b, func(*proc, []byte) {
		p.mu.Lock()
		p.lastInput = time.Now()
		p.mu.Unlock()
	})
}

// writeInput writes b into the running program's terminal under inputMu,
// running note (under inputMu too) with the run and b first: the record
// must stand before the program can echo the bytes, or a delivery that
// judges the screen meanwhile takes a person's echo for its own text
// leaving the input (TestPeopleNoSecondEnterOnTheirLine, under load).
func (p *Pane) writeInput(ctx context.Context, b []byte, note func(pr *proc, written []byte)) (int, error) {
	p.mu.Lock()
	pr := p.proc
	p.mu.Unlock()
	if pr == nil || pr.isExited() {
		return 0, fmt.Errorf("write to pane %s: %w", p.name(), ErrNotRunning)
	}
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	if len(b) > 0 {
		note(pr, b)
	}
	if isInterruptKey(b) {
		p.mu.Lock()
		p.endTurnLocked("a person's interrupt key") // a cancelled turn may run no stop hook
		p.mu.Unlock()
	}
	n, err := p.writeRaw(ctx, pr, b)
	if hook := p.afterInput.Load(); hook != nil {
		(*hook)()
	}
	if err != nil {
		return n, fmt.Errorf("write to pane %s: %w", p.name(), err)
	}
	return n, nil
}

// writeTo is the delivery engine's typing: it writes all of b to the
// program's terminal, giving up when the program exits, the pane stops or
// ctx ends, and records it as hm's input. It first checks, under inputMu
// (which the caller holds, as every typist does), that no person in attach
// holds the input (see personHold): a person's key that slipped in after
// the engine's wait makes it write nothing and fail with errPersonFirst,
// so that the message is tried again after the wait.
func (p *Pane) writeTo(ctx context.Context, pr *proc, b []byte) (int, error) {
	if hold, _, _ := p.personHold(pr); hold {
		return 0, errPersonFirst
	}
	written, err := p.writeRaw(ctx, pr, b)
	if written > 0 {
		p.noteInput()
	}
	return written, err
}

// noteInput records hm's own typing.
func (p *Pane) noteInput() {
	p.mu.Lock()
	p.lastInput = time.Now()
	p.typedAt = p.lastInput
	p.mu.Unlock()
}

// pressEnter writes one Enter (CR) into the program's terminal and, when
// id is set (a message's first Enter), records id in the pane's entered
// log, so that a hub killed now does not type the message again into
// the next program. Where the pane has a host (keeper.go), the host does
// both on one request (keeperEnter): it lives on when this hub is killed,
// so a kill -9 cannot fall between the Enter and its record. Without one
// (or when the host cannot be asked) the CR goes in with a raw write(2)
// and the record follows by the very next system call; a kill can then
// split the two only while the kernel runs something else between them.
// It presses no Enter (errPersonFirst) when a person's key reached the
// terminal after hm's own last typing: the line may then hold their text,
// and hm never submits a person's line. The caller holds inputMu.
func (p *Pane) pressEnter(ctx context.Context, pr *proc, id string) error {
	if p.personTypedAfterHM() {
		return fmt.Errorf("press enter: %w", errPersonFirst)
	}
	for {
		err := p.pressEnterOnce(pr, id)
		if err == nil {
			p.noteInput()
			return nil
		}
		if err := p.writeFailed(ctx, pr, err); err != nil {
			return err
		}
	}
}

// pressEnterOnce is one try of pressEnter, under writeMu: through the
// pane's host when id is to be recorded and the host can be asked, else
// by a raw write of its own.
func (p *Pane) pressEnterOnce(pr *proc, id string) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	record := recordableID(id)
	if record && pr.keeper != nil {
		note, err := pr.keeper.enter(id, p.spec.FaultAtEnter)
		if !errors.Is(err, errEnterNotAsked) {
			if note != "" {
				p.log.Warn("entered log (pane host)", "id", id, "note", note)
			}
			return err
		}
		p.log.Warn("the pane host could not be asked to press Enter; pressing it here", "id", id, "err", err)
	}
	rc, err := pr.master.SyscallConn()
	if err != nil {
		return fmt.Errorf("press enter: %w", err)
	}
	cr := [1]byte{'\r'}
	_ = pr.master.SetWriteDeadline(time.Now().Add(writeSlice))
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&cr[0])), 1)
		switch {
		case errno == syscall.EAGAIN:
			return false // wait until the terminal takes input
		case errno == syscall.EINTR:
			return false
		case errno != 0:
			werr = errno
		case n == 1 && record:
			if f := p.spec.FaultAtEnter; f != nil {
				f()
			}
			if err := p.entered.add(id); err != nil {
				p.log.Warn("entered log", "id", id, "err", err)
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return err
}

// writeFailed classifies a failed write to the program's terminal: nil when
// it only ran out its time slice (write again), ErrStopped or ctx's error
// when the caller gave up, ErrPaneExited when the program is gone, else the
// error itself.
func (p *Pane) writeFailed(ctx context.Context, pr *proc, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		select {
		case <-pr.exited:
			return ErrPaneExited
		case <-p.stopCh:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	}
	if pr.isExited() || errors.Is(err, fs.ErrClosed) || errors.Is(err, syscall.EIO) {
		return fmt.Errorf("%w: %w", ErrPaneExited, err)
	}
	return err
}

// writeRaw is writeTo without recording input (terminal answers are not
// typing). The caller holds inputMu, except for the terminal's answers
// (see replyLoop); b goes in as one write under writeMu.
func (p *Pane) writeRaw(ctx context.Context, pr *proc, b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	written := 0
	for written < len(b) {
		_ = pr.master.SetWriteDeadline(time.Now().Add(writeSlice))
		n, err := pr.master.Write(b[written:])
		written += n
		if err == nil {
			continue
		}
		if err := p.writeFailed(ctx, pr, err); err != nil {
			return written, err
		}
	}
	return written, nil
}

// Resize changes the terminal size of the running program (it receives
// SIGWINCH) and of later runs.
func (p *Pane) Resize(cols, rows uint16) error {
	if cols == 0 || rows == 0 {
		return fmt.Errorf("resize pane %s to %dx%d: size must be positive", p.name(), cols, rows)
	}
	p.vtMu.Lock()
	p.vt.Resize(int(cols), int(rows))
	p.mu.Lock()
	p.cols, p.rows = cols, rows
	pr := p.proc
	p.mu.Unlock()
	p.vtMu.Unlock()
	if pr == nil {
		return nil
	}
	if err := setWinsize(pr.master, cols, rows); err != nil && !errors.Is(err, fs.ErrClosed) {
		return fmt.Errorf("pane %s: %w", p.name(), err)
	}
	return nil
}
