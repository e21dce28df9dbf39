// Package cmdline is what every hm command shares, so that hm's commands
// (internal/cli) and hm-send (internal/sendcmd) apply one rule each: the
// process a command may touch (Env) and its exit codes, flags parsed by
// SPEC §12 (the shared --root, --port and --json; flags anywhere, or
// around free text), usage errors and help, the version line, and finding
// and dialling the hub (Discover, Hub).
package cmdline

import (
	"flag"
	"fmt"
	"io"
	"os"

	"hm/internal/ground/buildinfo"
)

// Env is what a command may touch of the process: its streams, environment
// and working directory. Tests pass their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string

	// Describe, when set, is given a command's flag set instead of its
	// help being printed (hm completion reads the commands' flags so).
	Describe func(fs *flag.FlagSet)
}

// OSEnv is the real process environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// VersionFlag asks any of hm, hm-send and hm-bg for its version.
const VersionFlag = "--version"

// PrintVersion prints "<name> <version> (commit …)" (internal/ground/buildinfo).
func PrintVersion(w io.Writer, name string) {
	fmt.Fprintln(w, name, buildinfo.Read())
}

// AnswerVersion answers args of the program name (hm-send, hm-bg) when they
// are a sole --version: it prints the version under that name and reports
// true; otherwise it does nothing and reports false.
func AnswerVersion(env Env, name string, args []string) bool {
	if len(args) != 1 || args[0] != VersionFlag {
		return false
	}
	PrintVersion(env.Stdout, name)
	return true
}
