package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"
)

// enteredLog records, one id per line, every message whose first Enter has
// been written into the pane (Spec.EnteredLog). Each record is a single
// write(2) to a file opened O_APPEND, made right after the Enter's: it is in
// the kernel once the call returns, so it survives the hub being killed
// (kill -9) even though nothing is fsynced. The hub reads it at its next
// start (ReadEntered) to tell a message the old program took from one it
// never got, since the ledger's own record of the Enter may not have
// committed before the kill.
type enteredLog struct {
	mu sync.Mutex
	f  *os.File
}

func openEnteredLog(path string) (*enteredLog, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("entered log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("entered log: %w", err)
	}
	return &enteredLog{f: f}, nil
}

// recordableID reports whether id can stand as one record of an entered
// log (a line that ReadEntered reads back as one field).
func recordableID(id string) bool {
	return id != "" && strings.IndexFunc(id, unicode.IsSpace) < 0
}

// add records id; errors only lose the shortcut (the ledger record still
// follows), so they are returned for logging.
func (l *enteredLog) add(id string) error {
	if l == nil || !recordableID(id) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	_, err := l.f.Write([]byte(id + "\n"))
	return err
}

func (l *enteredLog) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ReadEntered returns the ids recorded in an entered log (see
// Spec.EnteredLog), in order; a missing file has none. A last line cut by a
// crash is ignored.
func ReadEntered(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("entered log: %w", err)
	}
	// Every record ends in a newline: what follows the last one is a
	// record cut by the crash, and is dropped.
	return strings.Fields(string(data[:bytes.LastIndexByte(data, '\n')+1])), nil
}
