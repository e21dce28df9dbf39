// Package initwire wires a repository for hm (`hm init`, docs/protocol.md
// §15): it registers hm's MCP server, hooks and an instructions block with
// Claude Code, Codex and Gemini CLI, editing their files in place: JSON with
// comments through hujson, Codex's TOML as checked text, Markdown between
// markers. It backs every file up before its first change (<file>.hm.bak),
// changes nothing on a second run, shows a diff instead with DryRun, and
// undoes its work with Undo.
package initwire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hm/internal/ground/atomicfile"
	"hm/internal/ground/layout"
)

// Options are hm init's flags.
type Options struct {
	Root   string   // the coordination root: the repository to wire
	Agents []string // some of Agents; all when empty
	DryRun bool     // print a diff, write nothing
	Undo   bool     // put back what hm init changed
	Local  bool     // the per-user files (ScopeLocal), not the committed ones
	Out    io.Writer
}

// BackupSuffix names the copy of a file made before hm init first changed
// it; UndoneSuffix the copy undo keeps of a file changed since hm init wrote
// it.
const (
	BackupSuffix = ".hm.bak"
	UndoneSuffix = ".hm.undo"
)

// ParseAgents turns "claude,codex" into a list of known CLIs, in Agents'
// order; "" is all of them.
func ParseAgents(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return Agents, nil
	}
	want := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		a = strings.ToLower(strings.TrimSpace(a))
		if !slices.Contains(Agents, a) {
			return nil, fmt.Errorf("unknown agent %q (known: %s)", a, strings.Join(Agents, ", "))
		}
		want[a] = true
	}
	var out []string
	for _, a := range Agents {
		if want[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// file is one file hm init edits: where it is and its content before and
// after.
type file struct {
	rel     string // relative to the root, after symlinks
	path    string // absolute, after symlinks
	exists  bool
	mode    fs.FileMode
	old     []byte
	new     []byte
	notes   []string // what changed
	hints   []string // what the person has to do once about it
	created bool     // hm init created it (this run or, per the manifest, before)
}

func (f *file) changed() bool { return !f.exists || string(f.old) != string(f.new) }

// wiring is hm init's view of one root.
type wiring struct {
	root    string // after symlinks
	scope   Scope
	man     *manifest
	skipped []string // what this run leaves out, and why
}

// newWiring reads root's manifest, refusing one that is not hm init's own
// (checkManifest).
func newWiring(root string, scope Scope) (*wiring, error) {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	w := &wiring{root: r, scope: scope}
	if w.man, err = w.loadManifest(); err != nil {
		return nil, err
	}
	return w, w.checkManifest()
}

// manifestRel is the manifest's path in the root.
const manifestRel = layout.Dir + "/init.json"

func (w *wiring) manifestPath() string {
	return filepath.Join(w.root, filepath.FromSlash(manifestRel))
}

// resolve finds where rel really is: symlinks (the file's or a directory's)
// are followed, and must stay inside the root.
func (w *wiring) resolve(rel string) (string, string, error) {
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	// The deepest part that exists decides; the rest is created under it.
	existing, rest := p, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	real = filepath.Join(real, rest)
	r, err := filepath.Rel(w.root, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("%s: a symlink to %s, outside the root; hm init edits only files in %s (leave this CLI out with --agents)", rel, real, w.root)
	}
	return real, filepath.ToSlash(r), nil
}

// plan works out every change for agents without writing anything. Files
// that do not parse are all reported, and then nothing is changed at all.
func (w *wiring) plan(agents []string) ([]*file, error) {
	var files []*file
	byPath := map[string]*file{}
	var errs []error
	for _, a := range agents {
		for _, t := range w.targets(a) {
			path, rel, err := w.resolve(t.rel)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f := byPath[path]
			if f == nil {
				f = &file{rel: rel, path: path, mode: 0o644}
				data, err := os.ReadFile(path)
				switch {
				case err == nil:
					f.exists, f.old = true, data
					if st, err := os.Stat(path); err == nil {
						f.mode = st.Mode().Perm()
					}
				case !errors.Is(err, fs.ErrNotExist):
					errs = append(errs, err)
					continue
				}
				// A backup hm init keeps (or undo restores) is never a link.
				if _, err := checkOwn(path+BackupSuffix, rel+BackupSuffix); err != nil {
					errs = append(errs, err)
				}
				f.new = f.old
				f.created = !f.exists || slices.Contains(w.man.Created, rel)
				byPath[path] = f
				files = append(files, f)
			}
			out, note, err := t.apply(rel, f.new)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.new = out
			if note != "" {
				f.notes = append(f.notes, note)
				if t.hint != "" {
					f.hints = append(f.hints, t.hint)
				}
			}
		}
	}
	return files, errors.Join(errs...)
}

// Run is `hm init`.
func Run(opts Options) error {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	agents := opts.Agents
	if len(agents) == 0 {
		agents = Agents
	}
	scope := ScopeProject
	if opts.Local {
		scope = ScopeLocal
	}
	verb := (&wiring{scope: scope}).verb()
	w, err := newWiring(opts.Root, scope)
	if err != nil {
		if opts.Undo {
			verb += " --undo"
		}
		return fmt.Errorf("%w\n%s changed nothing", err, verb)
	}
	if opts.Undo {
		return w.undo(verb+" --undo", agents, opts.DryRun, out)
	}
	files, err := w.plan(agents)
	if err != nil {
		return fmt.Errorf("%w\n%s changed nothing: fix the file(s) above (or move them aside), or leave that CLI out with --agents", err, verb)
	}
	fmt.Fprintf(out, "%s: %s (%s)\n", verb, w.root, strings.Join(agents, ", "))
	w.printSkipped(out)
	gi := w.checkGitIgnore()
	if opts.DryRun {
		w.preview(files, gi, out)
		return nil
	}
	if err := w.apply(files, gi); err != nil {
		return err
	}
	w.report(files, gi, out)
	return nil
}

// preview prints each change as a unified diff.
func (w *wiring) preview(files []*file, gi gitIgnore, out io.Writer) {
	n := 0
	for _, f := range files {
		if !f.changed() {
			fmt.Fprintf(out, "unchanged %s\n", f.rel)
			continue
		}
		n++
		from := "a/" + f.rel
		if !f.exists {
			from = "/dev/null"
		} else if !f.created && !exists(f.path+BackupSuffix) {
			fmt.Fprintf(out, "would back up %s to %s\n", f.rel, f.rel+BackupSuffix)
		}
		fmt.Fprint(out, unifiedDiff(from, "b/"+f.rel, f.old, f.new))
	}
	if gi.create {
		n++
		fmt.Fprintf(out, "would create %s (keeps runtime/ secrets and local state out of git)\n", gitIgnoreRel)
	} else if gi.note != "" {
		fmt.Fprintln(out, gi)
	}
	fmt.Fprintf(out, "dry run: %d file(s) would change; nothing written\n", n)
}

// apply writes the planned changes: backups first, then the files and
// .squidrun/.gitignore, then the manifest.
func (w *wiring) apply(files []*file, gi gitIgnore) error {
	dirty := false
	for _, f := range files {
		if !f.changed() {
			continue
		}
		if f.exists && !f.created {
			err := atomicfile.WriteNew(f.path+BackupSuffix, f.old, f.mode)
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		if err := w.mkdirs(filepath.Dir(f.path)); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(f.path, f.new, f.mode); err != nil {
			return err
		}
		if f.created && !slices.Contains(w.man.Created, f.rel) {
			w.man.Created = append(w.man.Created, f.rel)
		}
		w.man.Written[f.rel] = digest(f.new)
		dirty = true
	}
	if gi.create {
		made, err := w.writeGitIgnore()
		if err != nil {
			return err
		}
		dirty = dirty || made
	}
	if !dirty {
		return nil
	}
	if err := w.mkdirs(filepath.Dir(w.manifestPath())); err != nil {
		return err
	}
	return w.man.save(w.manifestPath())
}

// mkdirs creates dir and its missing parents (0755; .squidrun 0700, as
// hm up makes it), recording the ones it made for undo.
func (w *wiring) mkdirs(dir string) error {
	if exists(dir) {
		return nil
	}
	if err := w.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	mode := fs.FileMode(0o755)
	if filepath.Base(dir) == layout.Dir {
		mode = 0o700
	}
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	rel, _ := filepath.Rel(w.root, dir)
	w.man.Dirs = append(w.man.Dirs, filepath.ToSlash(rel))
	return nil
}

// report says what was done and what the person still has to do once.
func (w *wiring) report(files []*file, gi gitIgnore, out io.Writer) {
	var hints []string
	changed := false
	for _, f := range files {
		status := "unchanged"
		switch {
		case !f.changed():
		case !f.exists:
			status = "created"
		default:
			status = "changed"
		}
		line := fmt.Sprintf("%-9s %s", status, f.rel)
		if len(f.notes) > 0 {
			line += ": " + strings.Join(f.notes, "; ")
		}
		if f.changed() && exists(f.path+BackupSuffix) {
			line += " (backup " + f.rel + BackupSuffix + ")"
		}
		fmt.Fprintln(out, line)
		changed = changed || f.changed()
		hints = append(hints, f.hints...)
	}
	if line := gi.String(); line != "" {
		fmt.Fprintln(out, line)
		changed = changed || gi.create
	}
	if !changed {
		fmt.Fprintln(out, "already wired: nothing changed")
		return
	}
	for _, h := range hints {
		fmt.Fprintln(out, "next: "+h)
	}
	fmt.Fprintln(out, "undo: "+w.verb()+" --undo")
}

// manifest is .squidrun/init.json: what hm init created and last wrote,
// so that undo removes only its own files and keeps later edits.
type manifest struct {
	Created []string          `json:"created,omitempty"` // files hm init created
	Dirs    []string          `json:"dirs,omitempty"`    // directories hm init created
	Written map[string]string `json:"written"`           // file → sha256 of what hm init last wrote
}

// loadManifest reads .squidrun/init.json (none is an empty manifest):
// .squidrun must be a directory and the manifest a file of hm init's own,
// neither a link.
func (w *wiring) loadManifest() (*manifest, error) {
	m := &manifest{Written: map[string]string{}}
	if _, err := w.walk(manifestRel); err != nil {
		return nil, fmt.Errorf("%s: %w; hm init writes its manifest only inside the root: make %s a directory", manifestRel, err, layout.Dir)
	}
	data, _, err := readOwn(w.manifestPath(), manifestRel)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err == nil {
		if err = json.Unmarshal(data, m); err != nil {
			err = fmt.Errorf("%s: %w", manifestRel, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if m.Written == nil {
		m.Written = map[string]string{}
	}
	return m, nil
}

func (m *manifest) save(path string) error {
	slices.Sort(m.Created)
	data, _ := json.MarshalIndent(m, "", "  ")
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// printSkipped names what this run leaves out.
func (w *wiring) printSkipped(out io.Writer) {
	for _, s := range w.skipped {
		fmt.Fprintf(out, "%-9s %s\n", "skipped", s)
	}
}

// verb is the command this run is, as the person typed it.
func (w *wiring) verb() string {
	if w.scope == ScopeLocal {
		return "hm init --local"
	}
	return "hm init"
}
