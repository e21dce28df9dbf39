// Package atomicfile has one job: writing a whole file so that readers see
// either nothing (or the previous content) or the complete new content, never
// a partial file, and so that the new file survives a crash once the write
// returns.
//
// Every write goes the same way: the data goes to a temp dotfile
// ".<name>.<random>.tmp" in the destination's directory (so the final step is
// a rename within one file system, and directory watchers that ignore
// dotfiles and *.tmp never see it), the file gets its mode with fchmod (exact,
// whatever the umask), is fsynced and closed, is moved into place, and the
// directory is fsynced so the new name is durable too. On every error the
// temp file is removed.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path atomically with the given permission bits,
// replacing any existing file. The directory must exist. An error after the
// file is in place can come only from the directory fsync.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	if err := write(path, data, mode, os.Rename); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteNew is WriteFile that never replaces an existing file: if path exists
// it fails with an error wrapping fs.ErrExist and leaves that file untouched.
// See RenameNoReplace for the one weak case.
func WriteNew(path string, data []byte, mode fs.FileMode) error {
	if err := write(path, data, mode, RenameNoReplace); err != nil {
		return fmt.Errorf("write new %s: %w", path, err)
	}
	return nil
}

// RenameNoReplace moves oldpath to newpath without ever replacing an existing
// newpath (an error wrapping fs.ErrExist): a hard link, which fails
// atomically if newpath exists, then an unlink of oldpath. On file systems
// without hard links it falls back to a rename after checking that newpath
// is absent, which a concurrent creator could race.
func RenameNoReplace(oldpath, newpath string) error {
	err := os.Link(oldpath, newpath)
	switch {
	case err == nil:
		// newpath is in place; a leftover second name would only be a
		// stray file, so this unlink is best effort.
		_ = os.Remove(oldpath)
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	}
	if _, serr := os.Lstat(newpath); serr == nil {
		return fmt.Errorf("rename %s: %s: %w", oldpath, newpath, fs.ErrExist)
	}
	return os.Rename(oldpath, newpath)
}

// write does the temp-file dance, publishing the temp file with place.
func write(path string, data []byte, mode fs.FileMode, place func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close() // harmless if already closed
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(mode.Perm()); err != nil {
		return fmt.Errorf("chmod temp file: %w", err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write temp file: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync temp file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close temp file: %w", err)
	}
	if err = place(tmp, path); err != nil {
		return err
	}
	// The file is in place under path and tmp is gone, so the deferred
	// cleanup's Remove(tmp) is a no-op should the directory sync fail.
	return SyncDir(dir)
}

// SyncDir makes a directory entry change durable. File systems that cannot
// fsync a directory (EINVAL, ENOTSUP) are tolerated: there is nothing more
// to do on them.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
