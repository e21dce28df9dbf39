package realcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// paneProcesses lists the processes whose environment has HOME=home: on
// Linux, read from /proc. Every process a pane's CLI starts inherits the
// scratch HOME the suite gives it, whatever session or parent it ends in.
func paneProcesses(home string) map[int]string {
	out := map[int]string{}
	want := []byte("HOME=" + home + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.HasPrefix(env, want) && !bytes.Contains(env, append([]byte{0}, want...)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out[pid] = string(bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '}))
	}
	return out
}
