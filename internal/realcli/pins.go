// Package realcli runs the real agent CLIs (Claude Code, Codex CLI, Gemini
// CLI), pinned in scripts/agent-clis.txt and installed by `make deps`, in hm
// panes against a scripted model (package realcli/model). This file finds
// the pinned CLIs; the suite itself is in the package's tests.
package realcli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// CLI is one pinned agent CLI: an npm package at an exact version and the
// binary it installs.
type CLI struct {
	Package, Version, Bin string
}

// Spec is the npm install argument, package@version.
func (c CLI) Spec() string { return c.Package + "@" + c.Version }

// PinFile is the path of scripts/agent-clis.txt in the source tree this
// package was built from.
func PinFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "agent-clis.txt")
}

// CacheDir is where `make deps` installs the CLIs: $HM_CLI_CACHE, else
// $HOME/.cache/hm/agent-clis (scripts/deps.sh uses the same rule).
func CacheDir() string {
	if d := os.Getenv("HM_CLI_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "hm", "agent-clis")
}

// Pinned reads the pin file.
func Pinned() ([]CLI, error) {
	f, err := os.Open(PinFile())
	if err != nil {
		return nil, fmt.Errorf("pinned agent CLIs: %w", err)
	}
	defer f.Close()
	clis, err := parsePins(f)
	if err != nil {
		return nil, fmt.Errorf("pinned agent CLIs: %s: %w", PinFile(), err)
	}
	return clis, nil
}

// parsePins parses "<package> <version> <binary>" lines; blank lines and
// lines starting with # are skipped.
func parsePins(r io.Reader) ([]CLI, error) {
	var out []CLI
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want \"<package> <version> <binary>\", have %q", n, line)
		}
		out = append(out, CLI{Package: f[0], Version: f[1], Bin: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no CLI pinned")
	}
	return out, nil
}

// Find returns the path of the pinned CLI whose binary is bin, installed
// in the cache; the error names `make deps` when it is not installed.
func Find(bin string) (string, CLI, error) {
	clis, err := Pinned()
	if err != nil {
		return "", CLI{}, err
	}
	for _, c := range clis {
		if c.Bin != bin {
			continue
		}
		path := filepath.Join(CacheDir(), c.Spec(), "node_modules", ".bin", c.Bin)
		if _, err := os.Stat(path); err != nil {
			return "", c, fmt.Errorf("%s %s is not installed (%s missing): run `make deps`", c.Package, c.Version, path)
		}
		return path, c, nil
	}
	return "", CLI{}, fmt.Errorf("no CLI with binary %q in %s", bin, PinFile())
}
