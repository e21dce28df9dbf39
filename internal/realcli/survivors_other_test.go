//go:build !linux

package realcli

import (
	"os/exec"
	"strconv"
	"strings"
)

// paneProcesses lists the processes whose command line names home's
// parent (the pane's scratch directory): without /proc the environment
// of other processes is not readable, so this sees fewer than on Linux.
func paneProcesses(home string) map[int]string {
	out := map[int]string{}
	b, _ := exec.Command("ps", "-axo", "pid=,command=").Output()
	scratch := home[:strings.LastIndex(home, "/")]
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && strings.Contains(l, scratch) {
			pid, _ := strconv.Atoi(f[0])
			out[pid] = strings.Join(f[1:], " ")
		}
	}
	return out
}
