package initwire

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hm/internal/atomicfile"
)

// undo puts back what hm init changed for agents: a file with a backup gets
// the backup's bytes (and mode) back and the backup is removed; a file hm
// init created is removed, and so are the directories it created once
// empty. A file changed by someone else since hm init last wrote it is kept
// beside as <file>.hm.undo first, so undo never loses an edit.
func (w *wiring) undo(agents []string, dryRun bool, out io.Writer) error {
	fmt.Fprintf(out, "hm init --undo: %s (%s)\n", w.root, strings.Join(agents, ", "))
	seen := map[string]bool{}
	n := 0
	for _, a := range agents {
		for _, t := range targets(a) {
			path, rel, err := w.resolve(t.rel)
			if err != nil {
				fmt.Fprintf(out, "skipped  %v\n", err) // hm init never wrote there
				continue
			}
			if seen[path] {
				continue
			}
			seen[path] = true
			did, err := w.undoFile(path, rel, dryRun, out)
			if err != nil {
				return err
			}
			if did {
				n++
			}
		}
	}
	if dryRun {
		fmt.Fprintf(out, "dry run: %d file(s) would be restored or removed; nothing written\n", n)
		return nil
	}
	// Directories hm init made, deepest first, once nothing is left in them.
	for i := len(w.man.Dirs) - 1; i >= 0; i-- {
		d := filepath.Join(w.root, filepath.FromSlash(w.man.Dirs[i]))
		if d == filepath.Dir(w.manifestPath()) {
			continue // after the manifest
		}
		if os.Remove(d) == nil || !exists(d) {
			w.man.Dirs = slices.Delete(w.man.Dirs, i, i+1)
		}
	}
	if err := w.saveOrDropManifest(); err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(out, "nothing to undo")
	}
	return nil
}

// undoFile undoes one file; it reports whether there was anything to undo.
func (w *wiring) undoFile(path, rel string, dryRun bool, out io.Writer) (bool, error) {
	bak := path + BackupSuffix
	backup, berr := os.ReadFile(bak)
	if berr != nil && !errors.Is(berr, fs.ErrNotExist) {
		return false, berr
	}
	created := slices.Contains(w.man.Created, rel)
	if berr != nil && !created {
		return false, nil
	}
	cur, cerr := os.ReadFile(path)
	if cerr != nil && !errors.Is(cerr, fs.ErrNotExist) {
		return false, cerr
	}
	edited := cerr == nil && w.man.Written[rel] != "" && digest(cur) != w.man.Written[rel]
	if dryRun {
		if berr == nil {
			fmt.Fprint(out, unifiedDiff("a/"+rel, "b/"+rel, cur, backup))
			fmt.Fprintf(out, "would restore %s from %s\n", rel, rel+BackupSuffix)
		} else if cerr == nil {
			fmt.Fprintf(out, "would remove %s (hm init created it)\n", rel)
		}
		if edited {
			fmt.Fprintf(out, "would keep the current %s as %s (changed since hm init wrote it)\n", rel, rel+UndoneSuffix)
		}
		return true, nil
	}
	if edited {
		mode := fs.FileMode(0o644)
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
		if err := atomicfile.WriteNew(path+UndoneSuffix, cur, mode); err != nil {
			return false, fmt.Errorf("%s changed since hm init wrote it, and keeping it as %s failed (move that file away first): %w", rel, rel+UndoneSuffix, err)
		}
		fmt.Fprintf(out, "kept     %s as %s (changed since hm init wrote it)\n", rel, rel+UndoneSuffix)
	}
	if berr == nil {
		st, err := os.Stat(bak)
		if err != nil {
			return false, err
		}
		if err := atomicfile.WriteFile(path, backup, st.Mode().Perm()); err != nil {
			return false, err
		}
		if err := os.Remove(bak); err != nil {
			return false, err
		}
		fmt.Fprintf(out, "restored %s from %s\n", rel, rel+BackupSuffix)
	} else if cerr == nil {
		if err := os.Remove(path); err != nil {
			return false, err
		}
		fmt.Fprintf(out, "removed  %s (hm init created it)\n", rel)
	}
	w.man.Created = slices.DeleteFunc(w.man.Created, func(s string) bool { return s == rel })
	delete(w.man.Written, rel)
	return true, nil
}

// saveOrDropManifest writes what is left of the manifest, or removes it
// (and .squidrun/ when hm init made it and it is empty).
func (w *wiring) saveOrDropManifest() error {
	mp := w.manifestPath()
	state := filepath.Dir(mp)
	stateRel, _ := filepath.Rel(w.root, state)
	onlyState := len(w.man.Dirs) == 1 && w.man.Dirs[0] == filepath.ToSlash(stateRel)
	if len(w.man.Created)+len(w.man.Written) == 0 && (len(w.man.Dirs) == 0 || onlyState) {
		if err := os.Remove(mp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if onlyState {
			_ = os.Remove(state) // only when empty: hm up may have put things there since
		}
		return nil
	}
	return w.man.save(mp)
}
