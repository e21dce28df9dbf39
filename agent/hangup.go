package agent

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// A process started with SIGHUP ignored (nohup hm up, a service manager
// that ignores it) passes the ignoring on to every program it execs: the
// kernel keeps an ignored signal ignored across exec, and Go's runtime
// keeps one ignored at start ignored. A pane program would then outlive
// its terminal's hangup — the hub's death without a keeper, a keeper's
// end after its grace — and nothing would end it. So before its first
// pane program starts, a process that ignores SIGHUP catches it instead,
// into a channel nobody reads: the process still does not stop at a
// hangup, and what it execs gets SIGHUP's default action again (a caught
// signal is reset to its default at exec).

var hangupOnce sync.Once

// defaultHangupForChildren makes the programs this process starts from now
// on get SIGHUP's default action, even if this process was started with
// SIGHUP ignored.
func defaultHangupForChildren() {
	hangupOnce.Do(func() {
		if signal.Ignored(syscall.SIGHUP) {
			// A full channel drops what arrives: still ignored here.
			signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		}
	})
}
