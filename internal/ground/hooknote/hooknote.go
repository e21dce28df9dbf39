// Package hooknote keeps what `hm hook` printed into its agent's context
// when the hub that leased those messages could not be told: the hook
// claims, prints, then sends the claim-ack; a hub killed between the two
// never records delivered.context, and the hub after it would hand the
// messages to the agent again. The hook leaves a note instead, and the
// next hub reads it before it re-routes what earlier hubs left pending
// (docs/protocol.md §14, "The claim rule").
package hooknote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hm/internal/ground/atomicfile"
	"hm/internal/ground/safeopen"
)

// Note is one hook run's printed messages.
type Note struct {
	Role string   `json:"role"` // the role the hook claimed as (the hub's answer)
	Hook string   `json:"hook"` // the hook, e.g. "claude PostToolUse"
	IDs  []string `json:"ids"`  // what it printed, in order
	AtMs int64    `json:"atMs"` // when it printed them
}

// maxBytes bounds a note the hub reads (a claim's ids fit many times
// over), maxName its role and hook (the ledger's detail keeps the hook);
// suffix ends a note's file name.
const (
	maxBytes = 64 << 10
	suffix   = ".json"
	maxName  = 80
)

// Write leaves n in dir (made 0700 when missing; never through a link),
// in a file of its own, 0600.
func Write(dir string, n Note) error {
	if err := n.valid(); err != nil {
		return err
	}
	if n.AtMs == 0 {
		n.AtMs = time.Now().UnixMilli()
	}
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("hook note: %w", err)
	}
	if err := ownDir(dir); err != nil {
		return err
	}
	name := strconv.FormatInt(time.Now().UnixNano(), 10) + "-" + strconv.Itoa(os.Getpid()) + suffix
	return atomicfile.WriteNew(filepath.Join(dir, name), data, 0o600)
}

// ownDir makes dir (its parent must exist: the hub's layout made it) and
// refuses one that is not a directory of its own, a symbolic link
// included: a note is never written through a link.
func ownDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("hook note: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("hook note: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("hook note: %s is not a directory (%s)", dir, fi.Mode().Type())
	}
	return nil
}

func (n Note) valid() error {
	switch {
	case n.Role == "" || n.Hook == "":
		return errors.New("hook note: no role or hook")
	case len(n.Role) > maxName || len(n.Hook) > maxName:
		return fmt.Errorf("hook note: a role or hook over %d bytes", maxName)
	case len(n.IDs) == 0:
		return errors.New("hook note: no ids")
	}
	for _, id := range n.IDs {
		if id == "" || len(id) > 256 {
			return fmt.Errorf("hook note: bad id %q", id)
		}
	}
	return nil
}

// Found is one note file: its note, or why it cannot be read.
type Found struct {
	Path string
	Note Note
	Err  error
}

// Read lists the notes in dir, oldest first (none when dir does not
// exist). Files that are not notes (other names, directories, links) are
// left alone; a note file that cannot be read or parsed is listed with
// its Err.
func Read(dir string) ([]Found, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hook notes: %w", err)
	}
	var out []Found
	for _, e := range entries { // ReadDir sorts by name: by time written
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		n, err := readNote(path)
		out = append(out, Found{Path: path, Note: n, Err: err})
	}
	return out, nil
}

// readNote reads one note, opened without following a link or blocking
// on a FIFO swapped in after Read listed it, and only when it is a regular
// file of this user's.
func readNote(path string) (Note, error) {
	f, err := safeopen.Open(path)
	if err != nil {
		return Note{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Note{}, err
	}
	if !fi.Mode().IsRegular() {
		return Note{}, fmt.Errorf("hook note: not a regular file (%s)", fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return Note{}, fmt.Errorf("hook note: owned by uid %d, not by the hub's user", st.Uid)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return Note{}, err
	}
	if len(data) > maxBytes {
		return Note{}, fmt.Errorf("hook note over %d bytes", maxBytes)
	}
	var n Note
	if err := json.Unmarshal(data, &n); err != nil {
		return Note{}, fmt.Errorf("hook note: %w", err)
	}
	return n, n.valid()
}
