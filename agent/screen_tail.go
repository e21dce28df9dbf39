package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A pane's screen tail is the newest output of its current run, kept in a
// file the hub maps into its memory (MAP_SHARED), so that it outlives a
// hub killed with -9: each chunk of output is copied into the kernel's
// page cache, no system call, no batch held back (unlike the pane log,
// pane_log.go, which may lose its last second). A hub that adopts the
// pane (pane_adopt.go) replays the tail into its virtual terminal before
// the output the pane host buffered meanwhile: together they are all
// the program wrote, and its screen is what it was before the crash.
//
// A replay must start where a blank terminal can: the run's first byte,
// or a drawing of the whole screen. So when the output since the replay
// start would no longer fit, the tail starts over with the screen as the
// pane's terminal shows it (restart: vterm's Render, the drawing an
// attaching viewer gets) and goes on from there.
//
// The file lives beside the root's pane host socket (Keeper.SocketDir),
// one per pane, <role>.screen, mode 0600. Its layout (uint64s little
// endian; offsets count the run's stream of bytes):
//
//	0   magic "hmtail2\n"
//	8   size of the data ring
//	16  begun: where the last write ends once it is done
//	24  done: where the stream is written completely
//	32  start: where a replay starts (0, or a drawing of the screen)
//	40  when the program's last output came (Unix nanoseconds; 0: unknown)
//	48  the ring: stream byte n at 48 + n mod size
//
// A write raises begun, copies, then raises done to begun: a hub killed
// inside a copy leaves begun ahead of done, and the reader takes none of
// the bytes that copy may have overwritten. The file is created whole
// (written, not sparse) and never shrunk, so that a store into the
// mapping cannot fault on a full disk or on another's truncation: a new
// run removes the old file and creates its own.
const (
	screenTailMagic  = "hmtail2\n"
	screenTailBegun  = 16
	screenTailDone   = 24
	screenTailStart  = 32
	screenTailAt     = 40
	screenTailHeader = 48
	// ScreenTailBytes is the output a screen tail keeps: screens' worth
	// of rows, far more than any program's last screen needs.
	ScreenTailBytes = 256 << 10
)

// screenTail is a run's open screen tail. A nil *screenTail keeps nothing.
// It is not safe for concurrent use (the pane writes it under p.mu).
type screenTail struct {
	path string
	m    []byte // the mapping: header and ring
}

// screenTailPath is the screen tail of pane role under a host socket
// directory.
func screenTailPath(dir, role string) string {
	return filepath.Join(dir, role+".screen")
}

// createScreenTail replaces the file at path with an empty screen tail of
// size bytes and maps it, seeded with seed, output that came at at.
func createScreenTail(path string, size int, seed []byte, at time.Time) (*screenTail, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("screen tail: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("screen tail: %w", err)
	}
	defer f.Close() // the mapping stays
	head := make([]byte, screenTailHeader+size)
	copy(head, screenTailMagic)
	binary.LittleEndian.PutUint64(head[8:], uint64(size))
	if _, err := f.Write(head); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("screen tail: %w", err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, len(head), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("screen tail: map %s: %w", path, err)
	}
	t := &screenTail{path: path, m: m}
	t.write(seed)
	t.stamp(at)
	return t, nil
}

// u64 and setU64 read and write the header field at off.
func (t *screenTail) u64(off int) uint64       { return binary.LittleEndian.Uint64(t.m[off:]) }
func (t *screenTail) setU64(off int, v uint64) { binary.LittleEndian.PutUint64(t.m[off:], v) }

// ring is the data ring.
func (t *screenTail) ring() []byte { return t.m[screenTailHeader:] }

// write appends b, of which the ring keeps the last size bytes.
func (t *screenTail) write(b []byte) {
	if t == nil || len(b) == 0 {
		return
	}
	ring := t.ring()
	size := uint64(len(ring))
	end := t.u64(screenTailDone) + uint64(len(b))
	if uint64(len(b)) > size {
		b = b[uint64(len(b))-size:]
	}
	t.setU64(screenTailBegun, end)
	at := (end - uint64(len(b))) % size
	n := copy(ring[at:], b)
	copy(ring, b[n:])
	t.setU64(screenTailDone, end)
}

// stamp records at as when the program's last output came.
func (t *screenTail) stamp(at time.Time) {
	if t != nil && !at.IsZero() {
		t.setU64(screenTailAt, uint64(at.UnixNano()))
	}
}

// fits reports whether n more bytes keep all the stream since the
// replay start in the ring.
func (t *screenTail) fits(n int) bool {
	return t == nil || t.u64(screenTailDone)+uint64(n)-t.u64(screenTailStart) <= uint64(len(t.ring()))
}

// restart writes screen, a drawing of the whole screen, and makes it the
// replay start. One larger than half the ring is not written: the replay
// then starts after a cut (replayable).
func (t *screenTail) restart(screen []byte) {
	if t == nil || len(screen) > len(t.ring())/2 {
		return
	}
	at := t.u64(screenTailDone)
	t.write(screen)
	t.setU64(screenTailStart, at)
}

// close unmaps the tail; remove also deletes its file (the run ended:
// there is nothing to adopt).
func (t *screenTail) close(remove bool) {
	if t == nil {
		return
	}
	_ = unix.Munmap(t.m)
	t.m = nil
	if remove {
		_ = os.Remove(t.path)
	}
}

// tailed is what a screen tail held.
type tailed struct {
	// out is the stream from the replay start, else the newest bytes
	// (clean false: the oldest are gone, and the first may be inside an
	// escape sequence or a character).
	out   []byte
	clean bool
	// at is when the program's last output came (zero: unknown).
	at time.Time
}

// readScreenTail returns what the screen tail at path holds. A file that
// is missing or not a screen tail holds nothing.
func readScreenTail(path string) (tailed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return tailed{}, err
	}
	return parseScreenTail(b)
}

// parseScreenTail is readScreenTail on the file's bytes.
func parseScreenTail(b []byte) (tailed, error) {
	if len(b) < screenTailHeader || string(b[:8]) != screenTailMagic {
		return tailed{}, errors.New("screen tail: not a screen tail")
	}
	t := &screenTail{m: b}
	ring := t.ring()
	size, begun, done, start := t.u64(8), t.u64(screenTailBegun), t.u64(screenTailDone), t.u64(screenTailStart)
	if size == 0 || size != uint64(len(ring)) || begun < done || begun-done >= size || start > done {
		return tailed{}, errors.New("screen tail: a broken header")
	}
	n := min(done, size-(begun-done)) // a torn copy overwrote the oldest bytes
	r := tailed{clean: done-start <= n}
	if r.clean {
		n = done - start
	}
	r.out = make([]byte, n)
	from := (done - n) % size
	k := copy(r.out, ring[from:min(size, from+n)])
	copy(r.out[k:], ring[:n-uint64(k)])
	if at := t.u64(screenTailAt); at != 0 && at <= math.MaxInt64 {
		r.at = time.Unix(0, int64(at))
	}
	return r, nil
}

// replayable is the part of the tail a blank terminal can take: all of
// it when it is clean, else what follows its first line feed (no escape
// sequence or character that began before it is cut; what is drawn from
// there on is drawn on the screen as it was). nil: nothing.
func (r tailed) replayable() []byte {
	if r.clean {
		return r.out
	}
	i := bytes.IndexByte(r.out, '\n')
	if i < 0 {
		return nil
	}
	return r.out[i+1:]
}
