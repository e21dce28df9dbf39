package triggers

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"hm/internal/ground/status"
)

type claimedItem struct {
	name  string
	mtime time.Time
}

// rescan rebuilds the picture from the directory listings.
func (s *runState) rescan(now time.Time) {
	s.rescanDue = false
	s.paused = false
	s.badWaiting = false
	s.scanFailed = true // until the listings below are read
	s.w.rescans.Add(1)
	if err := s.w.ensureDirs(); err != nil {
		s.w.log.Error("rescan", "err", err)
		s.w.noteError(err)
		return
	}
	s.watchDir()

	// .claimed/ first: crash leftovers and transient failures.
	claimedErr := false
	s.claimedQ = s.claimedQ[:0]
	if des, err := os.ReadDir(s.w.claimed); err == nil {
		for _, de := range des {
			if _, ok := ParseName(de.Name()); !ok {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue
			}
			s.claimedQ = append(s.claimedQ, claimedItem{name: de.Name(), mtime: fi.ModTime()})
		}
	} else {
		s.fsError("scan", ClaimedDir, err)
		claimedErr = true
	}
	sort.Slice(s.claimedQ, func(i, j int) bool {
		a, b := s.claimedQ[i], s.claimedQ[j]
		if !a.mtime.Equal(b.mtime) {
			return a.mtime.Before(b.mtime)
		}
		return a.name < b.name
	})

	des, err := os.ReadDir(s.w.dir)
	if err != nil {
		s.fsError("scan", ".", err)
		return
	}
	s.scanFailed = claimedErr
	present := make(map[string]bool, len(des))
	ignored := map[string]bool{}
	for _, de := range des {
		name := de.Name()
		if name[0] == '.' || name == RejectedDir {
			continue
		}
		target, ok := ParseName(name)
		if !ok && de.Type().IsRegular() && badTxtName(name) {
			// A .txt file meant for the hub whose name names no target:
			// refuse it visibly (once it has stopped changing) rather than
			// leave it unread forever.
			if fi, err := de.Info(); err != nil || now.Sub(fi.ModTime()) < s.w.opts.Settle {
				s.badWaiting = true
			} else {
				s.reject(filepath.Join(s.w.dir, name), name, Reject(status.CodeInvalidTarget,
					"the file name %q names no target: write <target>.txt or <target>.<anything>.txt (target: letters, digits, single hyphens, at most %d bytes)", name, MaxTargetLen))
			}
			continue
		}
		if ok && !de.Type().IsRegular() {
			s.rejectNotRegular(name, de.Type())
			continue
		}
		if !ok {
			ignored[name] = true
			if !s.ignored[name] {
				s.w.log.Info("ignoring directory entry", "name", name, "why", "not a trigger file name")
			}
			continue
		}
		present[name] = true
		if e := s.entries[name]; e != nil {
			if e.state == stBlocked {
				s.makeReady(e)
			}
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		e := s.newEntry(name, target, now)
		e.size, e.mtime, e.checked, e.quiet = fi.Size(), fi.ModTime(), now, fi.ModTime()
		if e.quiet.After(now) {
			e.quiet = now
		}
		if now.Sub(e.quiet) >= s.w.opts.Settle && !s.heldOpen(e, now) {
			s.makeReady(e)
		} else {
			s.settle(e, e.quiet, now)
		}
	}
	s.ignored = ignored
	for name, e := range s.entries {
		if !present[name] {
			s.drop(e)
		}
	}
}

// watchDir (re-)adds the fsnotify watch of the directory if it was lost
// (the directory removed and re-created) and notes whether it watches.
func (s *runState) watchDir() {
	if s.fw == nil {
		return
	}
	if len(s.fw.WatchList()) == 0 {
		if err := s.fw.Add(s.w.dir); err != nil {
			s.w.log.Warn("re-add fsnotify watch", "err", err)
		} else {
			s.w.log.Info("watching the trigger dir again")
		}
	}
	s.watching = len(s.fw.WatchList()) > 0
}

// rejectNotRegular moves a symlink, FIFO, device, socket or directory that
// carries a trigger name to rejected/, unopened (SPEC §7: only regular files
// are read, nothing stays unexplained in triggers/).
func (s *runState) rejectNotRegular(name string, typ fs.FileMode) {
	if e := s.entries[name]; e != nil {
		s.drop(e)
	}
	s.reject(filepath.Join(s.w.dir, name), name, Reject(status.CodeNotRegular,
		"not a regular file (%s); only regular files are read", typeName(typ)))
}

// typeName names a file type for a reason file.
func typeName(typ fs.FileMode) string {
	switch {
	case typ&fs.ModeSymlink != 0:
		return "a symbolic link"
	case typ&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case typ&fs.ModeDevice != 0:
		return "a device"
	case typ&fs.ModeSocket != 0:
		return "a socket"
	case typ.IsDir():
		return "a directory"
	}
	return "type " + typ.String()
}

// removeStaleMarkers deletes marker files a crashed run may have left.
func (s *runState) removeStaleMarkers() {
	des, err := os.ReadDir(s.w.dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), syncPrefix) {
			_ = os.Remove(filepath.Join(s.w.dir, de.Name()))
		}
	}
}

// badTxtName reports whether name looks like a trigger file (it ends in
// .txt, is not a dotfile or a temp file) even though ParseName refuses it.
func badTxtName(name string) bool {
	const ext = ".txt"
	return len(name) > 0 && name[0] != '.' && len(name) >= len(ext) &&
		strings.EqualFold(name[len(name)-len(ext):], ext)
}
