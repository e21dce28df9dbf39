package triggers

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hm/internal/ground/atomicfile"
	"hm/internal/ground/safeopen"
	"hm/internal/ground/status"
)

// step processes one file. It reports whether it did any work.
func (s *runState) step(ctx context.Context) bool {
	if s.paused {
		return false
	}
	if len(s.claimedQ) > 0 {
		c := s.claimedQ[0]
		s.claimedQ = s.claimedQ[1:]
		now := s.w.now()
		target, _ := ParseName(c.name)
		s.process(ctx, c.name, target, now, now)
		return true
	}
	for s.ready.Len() > 0 {
		it := heap.Pop(&s.ready).(readyItem)
		e := it.e
		if !s.live(e) || e.state != stReady || e.ver != it.ver {
			continue
		}
		s.claim(ctx, e)
		return true
	}
	return false
}

// claim renames the file into .claimed/ and processes it.
func (s *runState) claim(ctx context.Context, e *entry) {
	src := filepath.Join(s.w.dir, e.name)
	dst := filepath.Join(s.w.claimed, e.name)
	if _, err := os.Lstat(dst); err == nil {
		// an earlier file of that name awaits a retry: keep order
		s.setState(e, stBlocked)
		return
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.drop(e)
			return
		}
		s.fsError("claim", e.name, err)
		s.setState(e, stBlocked)
		return
	}
	s.drop(e)
	s.process(ctx, e.name, e.target, e.seen, s.w.now())
}

func (s *runState) fsError(op, name string, err error) {
	s.w.log.Error("trigger file", "op", op, "name", name, "err", err)
	s.w.noteError(fmt.Errorf("%s %s: %w", op, name, err))
}

// process reads a claimed file, hands it to the sink and finishes it.
func (s *runState) process(ctx context.Context, name, target string, seen, claimedAt time.Time) {
	path := filepath.Join(s.w.claimed, name)
	data, fi, rerr := s.read(path)
	if rerr != nil {
		if CodeOf(rerr) != "" {
			s.reject(path, name, rerr)
			return
		}
		if errors.Is(rerr, errLinkPending) {
			s.paused = true // keep order: everything waits for the next rescan
			s.w.log.Info("trigger file has a second link; looking again at the next rescan", "name", name)
			return
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			s.fsError("read", name, rerr)
		}
		return
	}
	d, err := DecodeFile(data)
	if err != nil {
		s.reject(path, name, err)
		return
	}
	id, content, derived := d.MessageID, d.Content, false
	if id == "" {
		id, derived = s.fileID(name, fi), true
	}
	f := File{Name: name, Target: target, MessageID: id, IDDerived: derived, Content: content, Sig: d.Sig, ClaimedAt: claimedAt, Seen: seen}
	err = s.w.sink(ctx, f)
	switch {
	case err == nil:
		s.w.processed.Add(1)
		s.done(id)
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			s.fsError("remove", name, rmErr)
		}
		s.w.log.Debug("trigger committed", "name", name, "id", id, "target", target)
	case errors.Is(err, ErrReject):
		s.reject(path, name, err)
	default:
		s.paused = true
		if ctx.Err() != nil {
			return // shutting down; the file waits in .claimed/
		}
		s.w.retried.Add(1)
		s.w.noteError(fmt.Errorf("sink %s: %w", name, err))
		s.w.log.Warn("trigger sink failed, retrying at next rescan", "name", name, "id", id, "err", err)
	}
}

// errLinkPending: a file with more than one link whose link count changed
// within Settle; it is looked at again at the next rescan.
var errLinkPending = errors.New("more than one link, changed just now; looking again at the next rescan")

// linkWaitSteps bounds the wait (in milliseconds) for a second link to go.
const linkWaitSteps = 50

// fileID returns FileID(name, fi), made unique within this run: an id
// already committed and deleted in this run cannot be the same file again
// (an inode reused within one timestamp tick), so it gets a suffix.
func (s *runState) fileID(name string, fi fs.FileInfo) string {
	id := FileID(name, fi)
	for n := 2; ; n++ {
		if _, seen := s.doneIDs[id]; !seen {
			return id
		}
		id = FileID(name, fi) + "-" + strconv.Itoa(n)
	}
}

// done remembers a derived id whose file was committed and deleted.
func (s *runState) done(id string) {
	if !strings.HasPrefix(id, "trg-") {
		return
	}
	if s.doneIDs == nil || len(s.doneIDs) >= 4096 {
		s.doneIDs = map[string]struct{}{}
	}
	s.doneIDs[id] = struct{}{}
}

// read returns the file's bytes, or a RejectError for files that are too
// large, not regular or cannot be opened.
func (s *runState) read(path string) ([]byte, fs.FileInfo, error) {
	f, err := safeopen.Open(path)
	if err != nil {
		return nil, nil, openFailure(path, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, Reject(status.CodeNotRegular, "not a regular file (%s); only regular files are read", typeName(fi.Mode().Type()))
	}
	in, ok := statInode(fi)
	// A writer that links a temp file into place (atomicfile.WriteNew, as
	// hm-send does) has two names for an instant: give it a moment.
	for i := 0; ok && in.nlink > 1 && i < linkWaitSteps; i++ {
		time.Sleep(time.Millisecond)
		if fi, err = f.Stat(); err != nil {
			return nil, nil, err
		}
		in, ok = statInode(fi)
	}
	if ok {
		if uid := os.Geteuid(); uid >= 0 && in.uid != uint32(uid) {
			return nil, nil, Reject(status.CodeForeignOwner, "owned by uid %d, not by the hub's user (uid %d)", in.uid, uid)
		}
		if in.nlink > 1 {
			// A hard link made to smuggle in another file (runtime/hub-token)
			// keeps its second name. Judge only once the link count has stood
			// still for Settle (claiming changed the ctime too).
			if s.w.now().Sub(in.ctime) < s.w.opts.Settle {
				return nil, nil, errLinkPending
			}
			return nil, nil, Reject(status.CodeLinked, "the file has %d links; only a file with a single name is read (a hard link to another file is refused)", in.nlink)
		}
	}
	limit := s.w.opts.MaxBytes
	if fi.Size() > limit {
		return nil, nil, Reject(status.CodeTooLarge, "the file is %d bytes, the limit is %d", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, Reject(status.CodeTooLarge, "the file is over the %d-byte limit", limit)
	}
	return data, fi, nil
}

// openFailure turns the error of opening path into a RejectError when
// retrying cannot help: path is not a regular file (a socket fails with
// ENXIO, a symlink with ELOOP), belongs to another user, or is a file of ours
// that we may not read (EACCES, EPERM). Anything else, such as a file gone or
// too many open files, is returned as it is.
func openFailure(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if errors.Is(err, syscall.ELOOP) {
		return Reject(status.CodeNotRegular, "not a regular file (a symbolic link); only regular files are read")
	}
	fi, lerr := os.Lstat(path)
	if lerr != nil {
		if errors.Is(lerr, fs.ErrNotExist) {
			return lerr
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return Reject(status.CodeNotRegular, "not a regular file (%s); only regular files are read", typeName(fi.Mode().Type()))
	}
	if in, ok := statInode(fi); ok {
		if uid := os.Geteuid(); uid >= 0 && in.uid != uint32(uid) {
			return Reject(status.CodeForeignOwner, "owned by uid %d, not by the hub's user (uid %d)", in.uid, uid)
		}
	}
	if errors.Is(err, fs.ErrPermission) {
		cause := errors.Unwrap(err) // the errno, without the path
		if cause == nil {
			cause = err
		}
		return Reject(status.CodeUnreadable, "the hub may not read the file (mode %s): %v", fi.Mode().Perm(), cause)
	}
	return err
}

// reject moves a claimed file to rejected/ beside a reason file, never
// overwriting an earlier rejected file. The reason file, created empty,
// reserves the name; its code and reason are written once the file is in
// rejected/, so that a reason that says something always has its file
// beside it (TestHubTriggerFiles under make test once saw the reason
// before the file).
func (s *runState) reject(path, name string, cause error) {
	code := CodeOf(cause)
	if code == "" {
		code = status.CodeRejected
	}
	reason := strings.Join(strings.Fields(reasonText(cause)), " ")
	for n := 0; n < 10000; n++ {
		dstName := name
		if n > 0 {
			dstName = name + "." + strconv.Itoa(n)
		}
		dst := filepath.Join(s.w.rejected, dstName)
		rf, err := os.OpenFile(dst+".reason", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			s.fsError("reject", name, err)
			return
		}
		if werr := atomicfile.RenameNoReplace(path, dst); werr != nil {
			_ = rf.Close()
			_ = os.Remove(dst + ".reason")
			if errors.Is(werr, fs.ErrExist) {
				continue
			}
			if !errors.Is(werr, fs.ErrNotExist) {
				s.fsError("reject", name, werr)
			}
			return
		}
		_, werr := fmt.Fprintf(rf, "%s\n%s\n", code, reason)
		if cerr := rf.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			s.fsError("reject reason", name, werr) // the file is in rejected/ all the same
		}
		s.w.rejectedN.Add(1)
		s.w.log.Warn("trigger rejected", "name", name, "as", dstName, "code", code, "reason", reason)
		return
	}
	s.fsError("reject", name, errors.New("no free name in rejected/"))
}
