package agent

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"hm/roles"
)

// Drift is a pane's profile drift: hm typed into the pane on the
// Unmarked wait (Profile.Unmarked), its screen having stood still with
// none of the profile's markers, so the markers may no longer match the
// CLI's screen (a release that changed it). Messages then go in slower,
// never lost; settings.json "profiles" adds markers (docs/operations.md).
// It holds until the screen shows a ready marker again.
type Drift struct {
	// At is when hm last typed on the unmarked wait.
	At time.Time
	// Profile and Command are the pane's; Version is the CLI's
	// "--version" where the command runs claude, codex or gemini directly
	// ("" otherwise, or when it did not answer).
	Profile, Command, Version string
	// Rows are the last non-empty rows of the screen when hm typed.
	Rows []string
}

// Warning is the drift in one line, for hm status, hm doctor and the
// cockpit.
func (d *Drift) Warning() string {
	cli := d.Command
	if d.Version != "" {
		cli += " (" + d.Version + ")"
	}
	return fmt.Sprintf("profile %q: no ready marker on a quiet screen, typed anyway after the unmarked wait (%s); CLI %s; screen ends %q; add its markers in settings.json \"profiles\"",
		d.Profile, d.At.Format(time.TimeOnly), cli, strings.Join(d.Rows, " | "))
}

// driftRows is how many of the screen's last non-empty rows a Drift keeps.
const driftRows = 4

// noteDrift records that run pr is typed into on the unmarked wait
// (verdict v) and logs it. The CLI's version is asked once per pane.
func (p *Pane) noteDrift(pr *proc, v verdict) {
	var rows []string
	for _, r := range bottomRows(p.Screen(), p.profile.Screen.Rows) {
		if r = strings.TrimSpace(r); r != "" {
			rows = append(rows, r)
		}
	}
	rows = rows[max(0, len(rows)-driftRows):]
	p.mu.Lock()
	version, asked := "", p.drift != nil
	if asked {
		version = p.drift.Version
	}
	p.mu.Unlock()
	if !asked {
		version = p.cliVersion()
	}
	d := &Drift{At: time.Now(), Profile: p.profile.Name, Command: p.spec.Command, Version: version, Rows: rows}
	p.mu.Lock()
	p.drift = d
	p.mu.Unlock()
	p.log.Warn("no ready marker on a quiet screen; typing anyway (check the profile's screen markers)",
		"profile", p.profile.Name, "quiet", v.quiet.Round(time.Second), "command", p.spec.Command, "version", version, "rows", rows)
}

// clearDriftLocked ends the drift warning once a ready marker shows again;
// p.mu is held.
func (p *Pane) clearDriftLocked() {
	if p.drift != nil {
		p.log.Info("a ready marker shows again: profile drift warning cleared", "profile", p.profile.Name)
		p.drift = nil
	}
}

// versionWait bounds the CLI's answer to --version.
const versionWait = 3 * time.Second

// cliVersion is the first line of "<cli> --version" when the pane's
// command runs claude, codex or gemini directly, else "".
func (p *Pane) cliVersion() string {
	prog := commandProgram(p.spec.Command)
	if prog == "" || roles.InferProfile(prog) != p.profile.Name {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, shellPath, "-c", prog+" --version")
	cmd.Dir, cmd.Env = p.spec.Dir, childEnv(p.spec.Env)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if r := []rune(strings.TrimSpace(line)); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return strings.TrimSpace(line)
}

// commandProgram is the program word of a simple command line: the first
// word after VAR=value assignments, "exec" and "env" (with env's options;
// -u and -C take a word of their own), or "" when the line is not that
// simple (a pipeline, quoting, expansions): the word then goes into a
// shell command line as it is.
func commandProgram(command string) string {
	if strings.ContainsAny(command, "|;&<>()$`'\"\\\n") {
		return ""
	}
	env, skip := false, false
	for _, w := range strings.Fields(command) {
		switch {
		case skip:
			skip = false
		case roles.IsAssignment(w) || w == "exec":
		case !env && (w == "env" || strings.HasSuffix(w, "/env")):
			env = true
		case env && (w == "-u" || w == "-C" || w == "--unset" || w == "--chdir"):
			skip = true
		case env && strings.HasPrefix(w, "-"):
		default:
			return w
		}
	}
	return ""
}
