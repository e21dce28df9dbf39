package initwire

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// entry is one thing in a directory tree: a file's bytes and mode, a
// directory, a symlink's target, or another kind of file (a FIFO).
type entry struct {
	kind  byte // 'f', 'd', 'l', 'o'
	data  string
	mode  fs.FileMode
	mtime time.Time
}

// snapshot reads every file, directory and symlink under dir.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	tree := map[string]entry{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return tree
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			tree[rel] = entry{kind: 'l', data: target}
			return err
		case d.IsDir():
			tree[rel] = entry{kind: 'd', mode: info.Mode().Perm()}
		case !info.Mode().IsRegular(): // a FIFO would block a read
			tree[rel] = entry{kind: 'o', mode: info.Mode()}
		default:
			b, err := os.ReadFile(p)
			tree[rel] = entry{kind: 'f', data: string(b), mode: info.Mode().Perm(), mtime: info.ModTime()}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// copyTree copies the files of src (none when it does not exist) to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for rel, e := range snapshot(t, src) {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		var err error
		switch e.kind {
		case 'd':
			err = os.MkdirAll(p, 0o755)
		case 'l':
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			err = os.Symlink(e.data, p)
		default:
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			err = os.WriteFile(p, []byte(e.data), e.mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// writeTree replaces dir with the files of tree (for -update).
func writeTree(t *testing.T, dir string, tree map[string]entry) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, e := range tree {
		if e.kind != 'f' {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(e.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// files is tree's files' contents (what golden trees hold: git keeps
// neither modes nor empty directories).
func files(tree map[string]entry) map[string]string {
	out := map[string]string{}
	for rel, e := range tree {
		if e.kind == 'f' {
			out[rel] = e.data
		}
	}
	return out
}

// diffTrees describes how got differs from want, "" when it does not.
func diffTrees(want, got map[string]string) string {
	var b strings.Builder
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w, wok := want[n]
		g, gok := got[n]
		switch {
		case !gok:
			b.WriteString("missing " + n + "\n")
		case !wok:
			b.WriteString("unexpected " + n + ":\n" + g + "\n")
		case w != g:
			b.WriteString(unifiedDiff("want/"+n, "got/"+n, []byte(w), []byte(g)))
		}
	}
	return b.String()
}

// checkGolden compares got with testdata file name (rewriting it with
// -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update after checking):\n%s", name, unifiedDiff("want", "got", want, []byte(got)))
	}
}

// run runs hm init on root and returns its output with the root's path
// replaced by ROOT, and the error's text.
func run(t *testing.T, root string, opts Options, undo bool) (string, string) {
	t.Helper()
	var out bytes.Buffer
	opts.Root, opts.Out, opts.Undo = root, &out, undo
	err := Run(opts)
	real, _ := filepath.EvalSymlinks(root)
	msg := ""
	if err != nil {
		msg = strings.ReplaceAll(err.Error(), real, "ROOT") + "\n"
	}
	return strings.ReplaceAll(out.String(), real, "ROOT"), msg
}

// goldenCases are the repositories under testdata/golden/<name>/in (a
// missing in/ is an empty repository). "wired" starts from custom's
// result, so it is a repository hm init has already wired, and its undo
// goes back to custom's input. Where same is set, hm init must leave the
// tree as it is (and there is no out/).
var goldenCases = []struct {
	name, in, undone string
	same             bool
}{
	{name: "fresh", in: "fresh/in"},
	{name: "custom", in: "custom/in"},
	{name: "wired", in: "custom/out", undone: "custom/in", same: true},
	{name: "handwired", in: "handwired/in"},
	{name: "legacy", in: "legacy/in"},
	{name: "bad", in: "bad/in", same: true},
}

// TestGolden runs hm init on each case and compares the tree it leaves
// (backups and .squidrun/init.json included) with <name>/out and what it
// prints with <name>/stdout.txt; then checks that a second run changes no
// byte (mtimes included), and that --undo gives back the input byte for
// byte, modes included.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", c.name)
			in := filepath.Join("testdata", "golden", filepath.FromSlash(c.in))
			root := t.TempDir()
			copyTree(t, in, root)
			before := snapshot(t, root)

			stdout, errText := run(t, root, Options{}, false)
			after := snapshot(t, root)
			checkGolden(t, filepath.Join(dir, "stdout.txt"), stdout+errText)
			switch {
			case c.same:
				if !sameTree(before, after) {
					t.Errorf("hm init changed the tree:\n%s", diffTrees(files(before), files(after)))
				}
			case *update:
				writeTree(t, filepath.Join(dir, "out"), after)
			default:
				if d := diffTrees(files(snapshot(t, filepath.Join(dir, "out"))), files(after)); d != "" {
					t.Errorf("tree after hm init differs from %s/out (run with -update after checking):\n%s", dir, d)
				}
			}

			// Again: nothing changes, not even an mtime.
			stdout2, errText2 := run(t, root, Options{}, false)
			if errText2 != errText {
				t.Errorf("second run: error %q, first run %q", errText2, errText)
			}
			if errText == "" && !strings.Contains(stdout2, "already wired: nothing changed") {
				t.Errorf("second run says:\n%s", stdout2)
			}
			if again := snapshot(t, root); !sameTree(after, again) {
				t.Errorf("second run changed the tree:\n%s", diffTrees(files(after), files(again)))
			}

			// Undo: the input again, byte for byte.
			if _, errText := run(t, root, Options{}, true); errText != "" {
				t.Fatalf("undo: %s", errText)
			}
			want := before
			if c.undone != "" {
				orig := t.TempDir()
				copyTree(t, filepath.Join("testdata", "golden", filepath.FromSlash(c.undone)), orig)
				want = snapshot(t, orig)
			}
			if restored := snapshot(t, root); !sameContent(want, restored) {
				t.Errorf("undo did not restore the input:\n%s", diffTrees(files(want), files(restored)))
			}
		})
	}
}

// sameTree: the same entries with the same bytes, modes and mtimes.
func sameTree(a, b map[string]entry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w.kind != v.kind || w.data != v.data || w.mode != v.mode || !w.mtime.Equal(v.mtime) {
			return false
		}
	}
	return true
}

// sameContent: sameTree without mtimes.
func sameContent(a, b map[string]entry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w.kind != v.kind || w.data != v.data || w.mode != v.mode {
			return false
		}
	}
	return true
}

// TestDryRun: --dry-run prints the changes as a diff (golden) and leaves
// every file, mtime and directory as it was; so does --undo --dry-run.
func TestDryRun(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join("testdata", "golden", filepath.FromSlash(c.in)), root)
			before := snapshot(t, root)
			stdout, errText := run(t, root, Options{DryRun: true}, false)
			checkGolden(t, filepath.Join("testdata", "golden", c.name, "dry-run.txt"), stdout+errText)
			if after := snapshot(t, root); !sameTree(before, after) {
				t.Errorf("--dry-run changed the tree:\n%s", diffTrees(files(before), files(after)))
			}
			if errText != "" {
				return
			}
			// Wired: an undo dry run shows the way back and writes nothing.
			if _, errText := run(t, root, Options{}, false); errText != "" {
				t.Fatal(errText)
			}
			wired := snapshot(t, root)
			if _, errText := run(t, root, Options{DryRun: true}, true); errText != "" {
				t.Fatal(errText)
			}
			if after := snapshot(t, root); !sameTree(wired, after) {
				t.Errorf("--undo --dry-run changed the tree:\n%s", diffTrees(files(wired), files(after)))
			}
		})
	}
}
