// Package layout knows where things live under the coordination root
// (SPEC §1): finding the root, creating .squidrun/ with safe modes, and
// reading and atomically writing the small JSON state files.
package layout

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hm/internal/ground/atomicfile"
)

// Dir is the name of the state directory under the root.
const Dir = ".squidrun"

// Layout names every path under one coordination root.
type Layout struct {
	Root string
}

// FindRoot applies SPEC §1: flag, else $SQUIDRUN_ROOT, else the nearest
// ancestor of the working directory holding .squidrun/, else the working
// directory.
func FindRoot(flagRoot string, getenv func(string) string) (Layout, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	root := flagRoot
	if root == "" {
		root = getenv("SQUIDRUN_ROOT")
	}
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Layout{}, fmt.Errorf("find root: %w", err)
		}
		root = wd
		for d := wd; ; d = filepath.Dir(d) {
			if st, err := os.Stat(filepath.Join(d, Dir)); err == nil && st.IsDir() {
				root = d
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Layout{}, fmt.Errorf("find root: %w", err)
	}
	return Layout{Root: abs}, nil
}

// Paths.
func (l Layout) State() string       { return filepath.Join(l.Root, Dir) }
func (l Layout) Settings() string    { return filepath.Join(l.State(), "settings.json") }
func (l Layout) AppStatus() string   { return filepath.Join(l.State(), "app-status.json") }
func (l Layout) Triggers() string    { return filepath.Join(l.State(), "triggers") }
func (l Layout) Runtime() string     { return filepath.Join(l.State(), "runtime") }
func (l Layout) Ledger() string      { return filepath.Join(l.Runtime(), "evidence-ledger.db") }
func (l Layout) HubJSON() string     { return filepath.Join(l.Runtime(), "hub.json") }
func (l Layout) Token() string       { return filepath.Join(l.Runtime(), "hub-token") }
func (l Layout) LedgerKey() string   { return filepath.Join(l.Runtime(), "ledger-key") }
func (l Layout) HubLog() string      { return filepath.Join(l.Runtime(), "hub.log") }
func (l Layout) PaneLogs() string    { return filepath.Join(l.Runtime(), "panes") }
func (l Layout) HookNotes() string   { return filepath.Join(l.Runtime(), "hook-notes") }
func (l Layout) Handoffs() string    { return filepath.Join(l.State(), "handoffs") }
func (l Layout) Briefing() string    { return filepath.Join(l.Handoffs(), "briefing.md") }
func (l Layout) Session() string     { return filepath.Join(l.Handoffs(), "session.md") }
func (l Layout) LastSession() string { return filepath.Join(l.Handoffs(), "last-session.md") }

// CockpitSessions keeps the web cockpit's login sessions across hub
// restarts (keyed MACs of their ids, never the ids themselves).
func (l Layout) CockpitSessions() string {
	return filepath.Join(l.Runtime(), "cockpit-sessions")
}

// LedgerCheckpoint is the hub's latest signed ledger checkpoint (SPEC §9).
func (l Layout) LedgerCheckpoint() string {
	return filepath.Join(l.Handoffs(), "ledger-checkpoint.json")
}

func (l Layout) FullMessages() string {
	return filepath.Join(l.State(), "coord", "full-agent-messages")
}
func (l Layout) EnvFile() string { return filepath.Join(l.Root, ".env") }

// Ensure creates the directory tree with mode 0700 (and tightens modes of
// directories that already exist), and a .squidrun/.gitignore that keeps
// the runtime secrets out of git when there is none (WriteGitIgnore). A
// cloned repository may ship any of these as a symbolic link, or files in
// runtime/ as links out of the root: that is refused (checkInside), so hm
// never writes, appends or chmods outside the root.
func (l Layout) Ensure() error {
	return l.ensure(l.State(), l.Triggers(), filepath.Join(l.Triggers(), "rejected"), l.Runtime(), l.PaneLogs(), l.HookNotes(), l.Handoffs(), filepath.Join(l.State(), "coord"), l.FullMessages())
}

// EnsureTriggers creates .squidrun/ (with its .gitignore) and triggers/
// under the same rules as Ensure: what hm-send's fallback needs when no
// hub has run on the root yet.
func (l Layout) EnsureTriggers() error {
	return l.ensure(l.State(), l.Triggers())
}

func (l Layout) ensure(dirs ...string) error {
	for _, d := range dirs {
		if err := checkInside(l.Root, d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		if err := checkInside(l.Root, d); err != nil { // made meanwhile
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("chmod %s: %w", d, err)
		}
	}
	for _, d := range []string{l.Runtime(), l.PaneLogs(), l.HookNotes()} {
		if err := noLinksIn(d); err != nil {
			return err
		}
	}
	_, err := l.WriteGitIgnore()
	return err
}

// ErrOutsideRoot is the error of a state path that is a symbolic link or
// not a directory.
var ErrOutsideRoot = errors.New("hm keeps its state inside the root and follows no links there")

// checkInside fails when any existing component of dir below root is a
// symbolic link or not a directory.
func checkInside(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s: not under the root %s: %w", dir, root, ErrOutsideRoot)
	}
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: %w; replace it with a directory", p, ErrOutsideRoot)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory: %w", p, ErrOutsideRoot)
		}
	}
	return nil
}

// noLinksIn fails when dir holds a symbolic link: the files hm opens there
// (the ledger and its -wal, the token, the lock, logs) must be its own.
func noLinksIn(dir string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	for _, de := range des {
		if de.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: %w; remove it", filepath.Join(dir, de.Name()), ErrOutsideRoot)
		}
	}
	return nil
}

// HubInfo is runtime/hub.json.
type HubInfo struct {
	PID     int    `json:"pid"`
	Port    int    `json:"port"`
	URL     string `json:"url"`
	Session int    `json:"session"`
}

// HubRef is the hub part of app-status.json.
type HubRef struct {
	PID  int `json:"pid"`
	Port int `json:"port"`
}

// AppStatus is app-status.json.
type AppStatus struct {
	Session     int     `json:"session"`
	Started     string  `json:"started"`
	LastUpdated string  `json:"lastUpdated"`
	Version     string  `json:"version"`
	Hub         *HubRef `json:"hub,omitempty"`
}

// ReadAppStatus reads app-status.json; a missing file is session 0.
func (l Layout) ReadAppStatus() (AppStatus, error) {
	var s AppStatus
	err := readJSON(l.AppStatus(), "app-status", &s)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	return s, err
}

// WriteAppStatus writes app-status.json atomically.
func (l Layout) WriteAppStatus(s AppStatus) error {
	data, err := json.MarshalIndent(s, "", "  ")
	return writeJSON(l.AppStatus(), "app-status", data, err)
}

// NextSession increments the session counter and returns the new status.
// The new session is above after too (the last session the ledger holds),
// so that a lost or older app-status.json never repeats a session.
func (l Layout) NextSession(version string, now time.Time, after int) (AppStatus, error) {
	s, err := l.ReadAppStatus()
	if err != nil {
		return s, err
	}
	s.Session = max(s.Session, after) + 1
	ts := now.UTC().Format(time.RFC3339)
	s.Started, s.LastUpdated, s.Version, s.Hub = ts, ts, version, nil
	return s, l.WriteAppStatus(s)
}

// ReadHubInfo reads runtime/hub.json.
func (l Layout) ReadHubInfo() (HubInfo, error) {
	var h HubInfo
	err := readJSON(l.HubJSON(), "hub.json", &h)
	return h, err
}

// WriteHubInfo writes runtime/hub.json atomically.
func (l Layout) WriteHubInfo(h HubInfo) error {
	data, err := json.Marshal(h)
	return writeJSON(l.HubJSON(), "hub.json", data, err)
}

// readJSON decodes the JSON file at path into v; name is the file in the
// errors, which wrap the cause (os.ErrNotExist for a missing file).
func readJSON(path, name string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s: %w", name, err)
	}
	return nil
}

// writeJSON writes data, the encoding of the file named name (encErr its
// encoding error), with a final newline atomically at path, mode 0600.
func writeJSON(path, name string, data []byte, encErr error) error {
	if encErr != nil {
		return fmt.Errorf("encode %s: %w", name, encErr)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}
