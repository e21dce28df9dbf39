package agent

import (
	"strings"
	"time"

	"hm/roles"
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

// Profile names understood by [ProfileFor] (the names of package roles,
// where [roles.InferProfile] picks one from a command line).
const (
	// ProfileClaude is for Claude Code (Enter delay 120 ms).
	ProfileClaude = roles.ProfileClaude
	// ProfileCodex is for Codex CLI (Enter delay 250 ms).
	ProfileCodex = roles.ProfileCodex
	// ProfileGemini is for Gemini CLI (Enter delay 120 ms).
	ProfileGemini = roles.ProfileGemini
	// ProfileShell is for interactive shells: messages are typed as one
	// comment line (Enter delay 30 ms).
	ProfileShell = roles.ProfileShell
	// ProfileDefault is for any other program (Enter delay 150 ms).
	ProfileDefault = roles.ProfileDefault
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
