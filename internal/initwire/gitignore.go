package initwire

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"hm/internal/ground/layout"
)

// gitIgnoreRel is .squidrun/.gitignore's path in the root.
const gitIgnoreRel = layout.Dir + "/.gitignore"

// gitIgnore is what hm init finds of .squidrun/.gitignore (issue #33),
// which keeps the runtime secrets out of git: none is created (as hm up
// creates it); one that is not hm's is reported, never changed.
type gitIgnore struct {
	create bool
	note   string // why the one there may not keep runtime/ out of git
}

func (w *wiring) checkGitIgnore() gitIgnore {
	data, _, err := readOwn(layout.Layout{Root: w.root}.GitIgnorePath(), gitIgnoreRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gitIgnore{create: true}
	case err != nil:
		return gitIgnore{note: err.Error()}
	case !layout.HasGitIgnoreRules(data):
		return gitIgnore{note: gitIgnoreRel + " is not the one hm writes: check that it keeps runtime/ (hub-token, ledger-key, the ledger) out of git, or delete it and run hm init again"}
	}
	return gitIgnore{}
}

// writeGitIgnore creates .squidrun/.gitignore (and .squidrun/, recorded as
// hm init's); it reports whether the manifest has something new.
func (w *wiring) writeGitIgnore() (bool, error) {
	lay := layout.Layout{Root: w.root}
	n := len(w.man.Dirs)
	if err := w.mkdirs(lay.State()); err != nil {
		return false, err
	}
	if _, err := lay.WriteGitIgnore(); err != nil {
		return false, err
	}
	return len(w.man.Dirs) > n, nil
}

// dropGitIgnore removes hm's .squidrun/.gitignore when it is all that is
// left in .squidrun/ (undo is about to remove the directory hm init made);
// with anything else there (hm up ran since) it stays, and keeps that out
// of git.
func (w *wiring) dropGitIgnore() {
	lay := layout.Layout{Root: w.root}
	entries, err := os.ReadDir(lay.State())
	if err != nil || len(entries) != 1 || entries[0].Name() != ".gitignore" {
		return
	}
	if data, _, err := readOwn(lay.GitIgnorePath(), gitIgnoreRel); err == nil && layout.HasGitIgnoreRules(data) {
		_ = os.Remove(lay.GitIgnorePath())
	}
}

// String is the line hm init prints about it ("" for nothing).
func (g gitIgnore) String() string {
	switch {
	case g.note != "":
		return "note: " + g.note
	case g.create:
		return fmt.Sprintf("%-9s %s: keeps runtime/ (hub-token, ledger-key, the ledger) and local state out of git", "created", gitIgnoreRel)
	}
	return ""
}
