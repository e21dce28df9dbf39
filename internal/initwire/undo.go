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

	"hm/internal/ground/atomicfile"
)

// undoStep is what undo does to one file, worked out (and every backup
// read) before anything is written.
type undoStep struct {
	rel, path string
	hasBackup bool
	backup    []byte
	bakMode   fs.FileMode
	hasCur    bool
	cur       []byte
	curMode   fs.FileMode
	edited    bool // changed since hm init last wrote it: kept as .hm.undo first
}

// undo puts back what hm init changed for agents: a file with a backup gets
// the backup's bytes (and mode) back and the backup is removed; a file hm
// init created is removed, and so are the directories it created once
// empty. A file changed by someone else since hm init last wrote it is kept
// beside as <file>.hm.undo first, so undo never loses an edit. A backup
// that is not hm init's own (readOwn) is refused, and then nothing is
// undone.
func (w *wiring) undo(verb string, agents []string, dryRun bool, out io.Writer) error {
	fmt.Fprintf(out, "%s: %s (%s)\n", verb, w.root, strings.Join(agents, ", "))
	steps, err := w.planUndo(agents, out)
	if err != nil {
		return fmt.Errorf("%w\n%s changed nothing: move aside (or fix) what is named above, then run it again", err, verb)
	}
	if dryRun {
		for _, s := range steps {
			s.preview(out)
		}
		fmt.Fprintf(out, "dry run: %d file(s) would be restored or removed; nothing written\n", len(steps))
		return nil
	}
	for _, s := range steps {
		if err := w.undoFile(s, out); err != nil {
			return err
		}
	}
	w.removeDirs()
	if err := w.saveOrDropManifest(); err != nil {
		return err
	}
	if len(steps) == 0 {
		fmt.Fprintln(out, "nothing to undo")
	}
	return nil
}

// planUndo works out a step for each file of agents that has something to
// undo; every refusal is reported, together.
func (w *wiring) planUndo(agents []string, out io.Writer) ([]*undoStep, error) {
	seen := map[string]bool{}
	var steps []*undoStep
	var errs []error
	for _, a := range agents {
		for _, t := range w.targets(a) {
			path, rel, err := w.resolve(t.rel)
			if err != nil {
				fmt.Fprintf(out, "skipped  %v\n", err) // hm init never wrote there
				continue
			}
			if seen[path] {
				continue
			}
			seen[path] = true
			s, err := w.undoStepFor(path, rel)
			switch {
			case err != nil:
				errs = append(errs, err)
			case s != nil:
				steps = append(steps, s)
			}
		}
	}
	return steps, errors.Join(errs...)
}

// undoStepFor is the step for one file, nil when there is nothing to undo.
func (w *wiring) undoStepFor(path, rel string) (*undoStep, error) {
	s := &undoStep{rel: rel, path: path}
	var err error
	s.backup, s.bakMode, err = readOwn(path+BackupSuffix, rel+BackupSuffix)
	switch {
	case err == nil:
		s.hasBackup = true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if !s.hasBackup && !slices.Contains(w.man.Created, rel) {
		return nil, nil
	}
	s.cur, err = os.ReadFile(path)
	switch {
	case err == nil:
		s.hasCur, s.curMode = true, 0o644
		if st, err := os.Stat(path); err == nil {
			s.curMode = st.Mode().Perm()
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	s.edited = s.hasCur && w.man.Written[rel] != "" && digest(s.cur) != w.man.Written[rel]
	return s, nil
}

// preview says what s would do (--undo --dry-run).
func (s *undoStep) preview(out io.Writer) {
	if s.hasBackup {
		fmt.Fprint(out, unifiedDiff("a/"+s.rel, "b/"+s.rel, s.cur, s.backup))
		fmt.Fprintf(out, "would restore %s from %s\n", s.rel, s.rel+BackupSuffix)
	} else if s.hasCur {
		fmt.Fprintf(out, "would remove %s (hm init created it)\n", s.rel)
	}
	if s.edited {
		fmt.Fprintf(out, "would keep the current %s as %s (changed since hm init wrote it)\n", s.rel, s.rel+UndoneSuffix)
	}
}

// undoFile carries out s.
func (w *wiring) undoFile(s *undoStep, out io.Writer) error {
	if s.edited {
		if err := atomicfile.WriteNew(s.path+UndoneSuffix, s.cur, s.curMode); err != nil {
			return fmt.Errorf("%s changed since hm init wrote it, and keeping it as %s failed (move that file away first): %w", s.rel, s.rel+UndoneSuffix, err)
		}
		fmt.Fprintf(out, "kept     %s as %s (changed since hm init wrote it)\n", s.rel, s.rel+UndoneSuffix)
	}
	if s.hasBackup {
		if err := atomicfile.WriteFile(s.path, s.backup, s.bakMode); err != nil {
			return err
		}
		if err := os.Remove(s.path + BackupSuffix); err != nil {
			return err
		}
		fmt.Fprintf(out, "restored %s from %s\n", s.rel, s.rel+BackupSuffix)
	} else if s.hasCur {
		if err := os.Remove(s.path); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed  %s (hm init created it)\n", s.rel)
	}
	w.man.Created = slices.DeleteFunc(w.man.Created, func(r string) bool { return r == s.rel })
	delete(w.man.Written, s.rel)
	return nil
}

// removeDirs removes the directories hm init made (checkManifest vouched
// for them), deepest first, once nothing is left in them; .squidrun/ waits
// for the manifest.
func (w *wiring) removeDirs() {
	for i := len(w.man.Dirs) - 1; i >= 0; i-- {
		d := filepath.Join(w.root, filepath.FromSlash(w.man.Dirs[i]))
		if d == filepath.Dir(w.manifestPath()) {
			continue
		}
		if os.Remove(d) == nil || !exists(d) {
			w.man.Dirs = slices.Delete(w.man.Dirs, i, i+1)
		}
	}
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
			w.dropGitIgnore()
			_ = os.Remove(state) // only when empty: hm up may have put things there since
		}
		return nil
	}
	return w.man.save(mp)
}
