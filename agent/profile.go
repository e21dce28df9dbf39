package agent

import (
	"path/filepath"
	"strings"
	"time"
)

// Profile holds the injection timing used for one kind of agent program.
type Profile struct {
	// Name is the profile name: claude, codex, gemini, shell or default.
	Name string
	// Idle is how long the pane must have produced no output before a
	// non-urgent message is typed.
	Idle time.Duration
	// EnterDelay is the pause between the last text byte and the separate
	// Enter ("\r") write.
	EnterDelay time.Duration
	// Verify is how long to wait for output after Enter before Enter is sent
	// once more (and, after the retry, before giving up as unverified).
	Verify time.Duration
}

// Profile names understood by [ProfileFor].
const (
	// ProfileClaude is for Claude Code (Enter delay 120 ms).
	ProfileClaude = "claude"
	// ProfileCodex is for Codex CLI (Enter delay 250 ms).
	ProfileCodex = "codex"
	// ProfileGemini is for Gemini CLI (Enter delay 120 ms).
	ProfileGemini = "gemini"
	// ProfileShell is for interactive shells: messages are typed as one
	// comment line (Enter delay 30 ms).
	ProfileShell = "shell"
	// ProfileDefault is for any other program (Enter delay 150 ms).
	ProfileDefault = "default"
)

const (
	defaultIdle   = 400 * time.Millisecond
	defaultVerify = 1500 * time.Millisecond
)

// ProfileFor returns the timing profile with the given name (case-insensitive).
// Unknown or empty names return the default profile.
func ProfileFor(name string) Profile {
	p := Profile{Name: ProfileDefault, Idle: defaultIdle, EnterDelay: 150 * time.Millisecond, Verify: defaultVerify}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case ProfileClaude:
		p.Name, p.EnterDelay = ProfileClaude, 120*time.Millisecond
	case ProfileCodex:
		p.Name, p.EnterDelay = ProfileCodex, 250*time.Millisecond
	case ProfileGemini:
		p.Name, p.EnterDelay = ProfileGemini, 120*time.Millisecond
	case ProfileShell:
		p.Name, p.EnterDelay = ProfileShell, 30*time.Millisecond
	}
	return p
}

// withOverrides returns p with every non-zero field of o replacing p's.
func (p Profile) withOverrides(o Profile) Profile {
	if o.Idle > 0 {
		p.Idle = o.Idle
	}
	if o.EnterDelay > 0 {
		p.EnterDelay = o.EnterDelay
	}
	if o.Verify > 0 {
		p.Verify = o.Verify
	}
	return p
}

// shells are program names treated as interactive shells by InferProfile.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true,
	"mksh": true, "tcsh": true, "csh": true, "ash": true, "busybox": true, "nu": true,
}

// InferProfile guesses the profile name from a pane command line when no
// profile is configured: the first word that is not a VAR=value assignment
// or exec/env decides. Interactive shells (including "$SHELL") map to
// "shell" so that message text is typed as a comment and never executed; a
// shell given "-c" runs a command and maps to "default"; claude, codex and
// gemini map to their own profiles; anything else is "default".
func InferProfile(command string) string {
	fields := strings.Fields(command)
	for i, f := range fields {
		if strings.Contains(f, "=") && !strings.HasPrefix(f, "=") && !strings.ContainsAny(f[:strings.Index(f, "=")], "/$") {
			continue // VAR=value prefix
		}
		if f == "exec" || f == "env" || f == "command" || f == "nohup" {
			continue
		}
		f = strings.Trim(f, `"'`)
		base := filepath.Base(f)
		switch {
		case shells[base] || f == "$SHELL" || f == "${SHELL}":
			for _, arg := range fields[i+1:] {
				if arg == "-c" || strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "--") && strings.Contains(arg, "c") {
					return ProfileDefault
				}
			}
			return ProfileShell
		case strings.HasPrefix(base, ProfileClaude):
			return ProfileClaude
		case strings.HasPrefix(base, ProfileCodex):
			return ProfileCodex
		case strings.HasPrefix(base, ProfileGemini):
			return ProfileGemini
		}
		return ProfileDefault
	}
	return ProfileDefault
}
