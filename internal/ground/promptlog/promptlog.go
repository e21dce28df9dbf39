// Package promptlog reads the prompt log written by the fake agent CLI used
// in tests (agent/internal/fakeagent): one JSON line per submitted prompt.
package promptlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
)

// Prompt is one submitted prompt, or, when Discarded is set, input that
// the agent read and threw away (a busy spell, a flush on a switch to raw
// mode), or, when Interrupted is set, an interrupted busy spell: no prompt
// at all.
type Prompt struct {
	Prompt    string `json:"prompt"`
	Discarded string `json:"discarded,omitempty"`
	// Interrupted: the agent's busy spell was stopped by an Esc (no
	// prompt, no discarded input).
	Interrupted bool `json:"interrupted,omitempty"`
	// Restored: the interrupted prompt the agent put back into its input
	// (no prompt submitted).
	Restored string `json:"restored,omitempty"`
	At       int64  `json:"at"`  // unix ms
	PID      int    `json:"pid"` // the agent process that took it
}

// Read returns the prompts logged at path, oldest first. A missing file has
// none; a last line still being written is left for the next read; a
// complete line that is not a prompt record is an error.
func Read(path string) ([]Prompt, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read prompt log: %w", err)
	}
	// A last line without its newline is still being written: not yet.
	if i := bytes.LastIndexByte(b, '\n'); i < len(b)-1 {
		b = b[:i+1]
	}
	var out []Prompt
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var p Prompt
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return out, fmt.Errorf("prompt log %s: bad line %q: %w", path, sc.Text(), err)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// pointerRE finds the file named by a pointer line ("[full message (N
// bytes) in PATH]", agent's pointer form).
var pointerRE = regexp.MustCompile(`\[full message \(\d+ bytes\) in ([^\]]+)\]`)

// Full returns the prompt followed, when it is a pointer line, by the
// content of the file it names (what the agent reads), so that a test can
// look for text wherever the pane put it. A file that cannot be read adds
// nothing.
func (p Prompt) Full() string {
	m := pointerRE.FindStringSubmatch(p.Prompt)
	if m == nil {
		return p.Prompt
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		return p.Prompt
	}
	return p.Prompt + "\n" + string(b)
}
