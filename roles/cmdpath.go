package roles

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CommandProblem explains why the program a command line runs will not be
// found, or "": the first word past NAME=value assignments and the shell
// words that run the next one (exec, command, builtin, nohup, time) must be
// on path (a $PATH value; OnPath). A compound command (while, for, if,
// case, a group) names no program of its own: sh runs it, so it is not
// checked. It is the one check behind the hub's start-time warning, hm
// doctor's command lines and hm init's "hm is not on PATH".
func CommandProblem(command, path string) string {
	for _, w := range strings.Fields(command) {
		if IsAssignment(w) {
			continue
		}
		switch w {
		case "exec", "command", "builtin", "nohup", "time":
			continue
		case "while", "until", "for", "if", "case", "{", "(", "!":
			return ""
		}
		if !OnPath(w, path) {
			return "command " + strconv.Quote(w) + " not found on PATH"
		}
		return ""
	}
	return "empty command"
}

// OnPath reports whether name runs as a command where $PATH is path: a
// name with a slash is that file; any other, an executable regular file of
// that name in one of path's directories (empty entries skipped, as a
// shell that does not search the working directory would).
func OnPath(name, path string) bool {
	if strings.Contains(name, "/") {
		return executable(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir != "" && executable(filepath.Join(dir, name)) {
			return true
		}
	}
	return false
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
