package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"hm/internal/ground/atomicfile"
)

// File names inside the handoffs directory (SPEC §1).
const (
	SessionFile     = "session.md"
	LastSessionFile = "last-session.md"
	BriefingFile    = "briefing.md"
)

// writeMu serialises WriteHandoff calls within the process so a periodic
// rewrite and the shutdown rewrite cannot interleave their two renames.
var writeMu sync.Mutex

// WriteHandoff stores a handoff in dir (normally .squidrun/handoffs,
// created 0700 if missing). When session.md already holds exactly data it
// writes nothing and returns changed=false. Otherwise the current
// session.md (if any) is kept as last-session.md and data replaces
// session.md; both are written to a temporary file first and renamed into
// place (mode 0600), so readers never see a partial file and session.md is
// never missing once it exists.
func WriteHandoff(dir string, data []byte) (changed bool, err error) {
	writeMu.Lock()
	defer writeMu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("write handoff: %w", err)
	}
	cur := filepath.Join(dir, SessionFile)
	old, err := os.ReadFile(cur)
	switch {
	case err == nil:
		if bytes.Equal(old, data) {
			return false, nil
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, LastSessionFile), old, 0o600); err != nil {
			return false, fmt.Errorf("write handoff: keep previous: %w", err)
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, fmt.Errorf("write handoff: read current: %w", err)
	}
	if err := atomicfile.WriteFile(cur, data, 0o600); err != nil {
		return false, fmt.Errorf("write handoff: %w", err)
	}
	return true, nil
}

// WriteBriefing stores a briefing at path (normally
// .squidrun/handoffs/briefing.md): a temporary file in the same directory,
// renamed into place, mode 0600. The directory is created 0700 if missing.
func WriteBriefing(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write briefing: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write briefing: %w", err)
	}
	return nil
}
