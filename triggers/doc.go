// Package triggers implements the trigger-directory fallback of the hub
// (SPEC §7): a writer that drops one message per file into
// .squidrun/triggers/, and a watcher that claims, decodes and commits those
// files exactly once.
//
// # File names
//
// A trigger file is named "<target>.txt" (older tools) or
// "<target>.<anything>.txt" (hm-send writes "<target>.<messageId>.txt", so two
// writers never share a name). Dotfiles, "*.tmp", other extensions, names with
// path separators and names whose target is not a valid name (letters, digits,
// single hyphens) are ignored and left alone; see [ParseName].
//
// # Content
//
// An optional first line "[HM-MESSAGE-ID:<id>]" carries the message id; the
// rest is the message, header included. Files are UTF-8 (a UTF-8 BOM is
// dropped) or UTF-16 LE/BE with a BOM. Invalid UTF-8 is replaced by U+FFFD,
// CRLF and lone CR become LF, and NULs and every other control character except
// tab and newline are removed. Surrounding whitespace is trimmed. A file with
// nothing printable left is rejected as empty_content; see [Decode]. Without an
// explicit id the watcher derives "trg-<hex16>" from the claimed file's name,
// inode, modification time, size and change time ([FileID]): each file is its
// own message (two "architect.txt" files saying "yes" are two messages, also
// when the second reuses the first one's inode and mtime, or comes after a
// restart), while a file processed twice (for example after a crash between
// commit and delete) carries the same id and the ledger dedupes it.
//
// # Claiming
//
// The watcher claims a file by renaming it into the private directory
// "<dir>/.claimed/" (a dot-directory, so scans ignore it), reads at most
// MaxBytes+1 bytes of it without following symlinks, hands it to the [Sink],
// and then deletes it. A sink error wrapping [ErrReject] (see [Reject]) moves
// it to "<dir>/rejected/<name>" beside "<name>.reason" (first line: the code,
// second line: a human explanation); an existing rejected file is never
// overwritten, a numeric suffix is added instead. Any other sink error is
// transient: the file stays in .claimed/, processing pauses, and everything is
// retried in order at the next rescan. Files left in .claimed/ by a crash are
// processed first when Run starts.
//
// # When a file is ready
//
// A file must never be delivered before its writer is done. The rule:
//
//   - Renamed (or hard-linked) into place, the fast path: fsnotify reports a
//     Create. The watcher stats the file, then creates and removes a private
//     marker file ".hm-sync-*" in the directory and waits for the marker's own
//     Create event. Because inotify delivers events in order, every Write that
//     happened before the stat has been seen by then. A file that is non-empty
//     at the stat and received no Write event by the time the marker comes
//     back was complete when it appeared: it is claimed at once, unless a
//     process still holds it open for writing (its Write event can be queued
//     after the marker's: the kernel queues it once the size changed), when it
//     settles as below. The marker
//     costs one create and one unlink per batch of files, not per file.
//   - Written in place (a Create followed by Writes, or empty when first
//     seen): the file is claimed only after Settle of quiet, measured from the
//     later of its last Write event and its modification time, and confirmed
//     by a fresh stat showing the same size and mtime.
//   - Found by a rescan (startup drain, after an fsnotify error or queue
//     overflow, or the Rescan period while events cannot see everything): a file whose mtime is at least Settle old is
//     ready; a newer one is settled as above.
//
// Readiness is judged by the file no longer changing, never by its content
// (an empty file is not "unfinished", a file without a final newline is not
// "finished"). Before a settled file is taken, the watcher also checks that
// no process still holds it open for writing (on Linux by scanning
// /proc/*/fd, best effort; elsewhere this check is skipped): a writer that
// keeps the file open and pauses between lines is waited for until it closes
// the file, or until the file has been quiet for 30 s while held open, so an
// idle stray descriptor cannot strand a message. A writer that reopens the
// file for each part and pauses longer than Settle can still be cut short;
// its later parts then arrive as a new file. Writers that need a guarantee
// write a temp dotfile and rename it, as [Write] does.
//
// # Order and concurrency
//
// One goroutine owns all state: it reads fsnotify events, runs the rescans,
// and processes ready files one at a time, ordered by modification time, then
// arrival (event) order, then name; leftovers in .claimed/ go first. A
// sequential writer's files are therefore delivered in the order written. The sink is therefore never called
// concurrently by one Watcher. Only one Watcher may watch a directory.
package triggers
