package agent

import (
	"fmt"
	"regexp"
	"strings"
)

// Origin is how a pane's current program came to be (Status.Origin): hm
// status, the cockpit and the session handoff say it in the words of
// Status.OriginWords.
type Origin string

// Origins of a pane's program.
const (
	// OriginStarted: this hub started it, the pane's first run.
	OriginStarted Origin = "started"
	// OriginAdopted: the keeper of an earlier hub (one that died or was
	// restarted) handed it over; it kept running.
	OriginAdopted Origin = "adopted"
	// OriginRestarted: the program before it ended and hm started the
	// command again, blank: its CLI had no session to resume.
	OriginRestarted Origin = "restarted"
	// OriginResumed: the program before it ended and hm started the
	// profile's Resume form of the command with the CLI session its hooks
	// had reported, so the agent keeps its conversation.
	OriginResumed Origin = "resumed"
)

// OriginWords says how the pane's current program came to be, with the
// restarts so far: "started", "adopted", "restarted (1 restart)",
// "resumed (3 restarts, 2 resumed)". hm status, the cockpit and the
// session handoff show these words; nothing else restates them.
func (s Status) OriginWords() string {
	o := s.Origin
	if o == "" {
		o = OriginStarted
	}
	if s.Restarts == 0 {
		return string(o)
	}
	n := fmt.Sprintf("%d restart", s.Restarts)
	if s.Restarts != 1 {
		n += "s"
	}
	if s.Resumes > 0 {
		n += fmt.Sprintf(", %d resumed", s.Resumes)
	}
	return string(o) + " (" + n + ")"
}

// SessionPlaceholder and CommandPlaceholder are what Profile.Resume holds
// in place of the CLI session id and of the pane's command.
const (
	SessionPlaceholder = "{session}"
	CommandPlaceholder = "{command}"
)

// cliSession is what a CLI session id must look like for hm to put it on
// a command line: one shell word with nothing the shell would expand
// (the CLIs' ids are UUIDs).
var cliSession = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidSession reports whether id may name a CLI session on the command
// line that resumes it.
func ValidSession(id string) bool { return cliSession.MatchString(id) }

// resumeCommand is command in the resume form template (Profile.Resume)
// for the CLI session id; ok is false when the template resumes nothing
// (empty, or without SessionPlaceholder) or id is not ValidSession.
func resumeCommand(template, command, id string) (string, bool) {
	if !strings.Contains(template, SessionPlaceholder) || !ValidSession(id) {
		return "", false
	}
	r := strings.NewReplacer(CommandPlaceholder, command, SessionPlaceholder, id)
	return r.Replace(template), true
}
