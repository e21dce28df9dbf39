package initwire

// What hm init trusts in a repository it did not write (issue #33): a
// cloned repository can ship a backup that is a symlink to a file outside
// it, or a .squidrun/init.json naming paths outside it. Every file hm init
// reads back as its own and every path of the manifest is checked here,
// without following a link.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"hm/internal/ground/layout"
	"hm/internal/ground/safeopen"
)

// ownFile: what lstat (or fstat) found is a file hm init may have written
// itself: a regular file with one name. A symlink could reach, and a hard
// link be, a file outside the root.
func ownFile(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && links(fi) == 1
}

func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// readOwn reads a file hm init wrote and reads back (a backup, the
// manifest), opened without following a link (and without blocking on a
// FIFO) and refused unless ownFile. rel names it in errors; a missing file
// is an error wrapping fs.ErrNotExist.
func readOwn(p, rel string) ([]byte, fs.FileMode, error) {
	f, err := safeopen.Open(p)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, notOwn(p, rel)
	}
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", rel, err)
	}
	if !ownFile(fi) {
		return nil, 0, notOwn(p, rel)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", rel, err)
	}
	return data, fi.Mode().Perm(), nil
}

// checkOwn is readOwn's rule for a file hm init only needs to know about:
// whether it exists, and an error when it is not ownFile.
func checkOwn(p, rel string) (bool, error) {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !ownFile(fi):
		return true, notOwn(p, rel)
	}
	return true, nil
}

// notOwn is the refusal of what is at p (rel in the root), named with what
// it is.
func notOwn(p, rel string) error {
	what := "not a regular file"
	if fi, err := os.Lstat(p); err == nil {
		what = kind(fi)
		if fi.Mode()&fs.ModeSymlink != 0 {
			if to, err := os.Readlink(p); err == nil {
				what += " to " + to
			}
		}
	}
	return fmt.Errorf("%s is %s, not a file hm init wrote; hm init never follows a link or reads a linked file there (it could reach outside the root): move it away (git rm it if it is committed) and run again", rel, what)
}

// kind names what lstat found, for errors.
func kind(fi fs.FileInfo) string {
	m := fi.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsRegular() && links(fi) > 1:
		return fmt.Sprintf("a file with %d hard links", links(fi))
	case m.IsRegular():
		return "a file"
	}
	return "a special file"
}

// walk lstats rel (slash-separated, clean, inside the root) one component
// at a time: each directory on the way must be a directory of its own, not
// a symlink to one, so that rel is where it says. It returns the last
// component's lstat, nil when it or something on the way does not exist.
func (w *wiring) walk(rel string) (fs.FileInfo, error) {
	p := w.root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if i == len(parts)-1 {
			return fi, nil
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is %s, not a directory", strings.Join(parts[:i+1], "/"), kind(fi))
		}
	}
	return nil, nil
}

// ours lists the files and directories hm init creates: the targets of
// every CLI in every scope, as named and as their symlinks resolve inside the root, the
// directories above them, and .squidrun/.
func (w *wiring) ours() (files, dirs map[string]bool) {
	files, dirs = map[string]bool{}, map[string]bool{layout.Dir: true}
	for _, a := range Agents {
		for _, t := range allTargets(a) {
			rels := []string{t.rel}
			if _, rel, err := w.resolve(t.rel); err == nil {
				rels = append(rels, rel)
			}
			for _, r := range rels {
				files[r] = true
				for d := path.Dir(r); d != "."; d = path.Dir(d) {
					dirs[d] = true
				}
			}
		}
	}
	return files, dirs
}

// checkManifest refuses a manifest with a path that is not one hm init
// creates (ours: clean, relative, inside the root) or whose directories are
// not directories of their own (walk), or which is not a file or directory
// as listed. Each is named; undo and init then change nothing.
func (w *wiring) checkManifest() error {
	files, dirs := w.ours()
	var errs []error
	check := func(field, rel string, dir bool) {
		want, is := files[rel], func(fi fs.FileInfo) bool { return fi.Mode().IsRegular() }
		if dir {
			want, is = dirs[rel], func(fi fs.FileInfo) bool { return fi.IsDir() }
		}
		if !want {
			errs = append(errs, fmt.Errorf("%s: %q under %q is not a path hm init creates", manifestRel, rel, field))
			return
		}
		fi, err := w.walk(rel)
		if err == nil && fi != nil && !is(fi) {
			err = fmt.Errorf("%s is %s", rel, kind(fi))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q under %q: %w", manifestRel, rel, field, err))
		}
	}
	for _, rel := range w.man.Created {
		check("created", rel, false)
	}
	for _, rel := range slices.Sorted(maps.Keys(w.man.Written)) {
		check("written", rel, false)
	}
	for _, rel := range w.man.Dirs {
		check("dirs", rel, true)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w\nhm init trusts no other path in %s: fix or delete it (undo then restores from the backups alone)", errors.Join(errs...), manifestRel)
}
