package agent

import (
	"regexp"
	"strings"
	"time"

	"hm/roles"
)

// Profile describes how messages are typed into one kind of agent program:
// the timing, and, as data, how the program's screen looks when it is ready
// for a prompt, busy, or showing a dialog that only a person may answer.
type Profile struct {
	// Name is the profile name: claude, codex, gemini, shell, default or a
	// name from settings.json "profiles".
	Name string
	// Idle is the quiet period: how long the pane must have produced no
	// output (so its screen and cursor stood still) before a non-urgent
	// message is typed.
	Idle time.Duration
	// EnterDelay is the pause between the last text byte and the separate
	// Enter ("\r") write, while the terminal is not canonical (see
	// enterDelay).
	EnterDelay time.Duration
	// Verify is how long to wait for output after Enter before Enter is sent
	// once more (and, after the retry, before giving up as unverified).
	Verify time.Duration
	// Screen holds the readiness markers (see Classify).
	Screen Markers
	// Unmarked is how long a screen that shows none of the profile's
	// markers (no prompt, not busy, no dialog) must stand still before it
	// is taken as ready anyway: markers are data that a user can get wrong
	// and a CLI can outgrow, and the queue must not wait forever. Default
	// 15 s.
	Unmarked time.Duration
	// MultiLine: the program takes a multi-line bracketed paste as one
	// prompt (claude, codex, gemini). Only such a program gets a multi-line
	// body inline; every other one gets the one-line pointer to the file.
	// MultiLineSet marks an override that sets it (false included).
	MultiLine, MultiLineSet bool
	// EchoWait is how long typed text may take to appear on the screen
	// before the program is taken as not listening (default 2 s).
	EchoWait time.Duration
	// Erase is what is typed to clear text the program did not show (so
	// may or may not hold) before it is typed again; default Ctrl-U.
	Erase string
	// RawInput: the program reads its prompt with the terminal out of
	// canonical mode; while the terminal is still canonical (cooked) the
	// program is not reading yet, whatever its screen shows. RawInputSet
	// marks an override that sets it (false included).
	RawInput, RawInputSet bool
	// Interrupt is what is typed to stop a busy program's work so that an
	// [URGENT] message can be typed at once (Esc for claude, codex and
	// gemini). Empty: an urgent message waits for the next readiness.
	Interrupt string
	// Resume is the command line that resumes the CLI's session after its
	// program ended: CommandPlaceholder ("{command}") stands for the pane's
	// command and SessionPlaceholder ("{session}") for the session id the
	// program's hooks reported (ValidSession: one shell word). Empty, or
	// without "{session}": the program is started again blank.
	Resume string
}

// Markers describe a program's screen. Each marker is a substring matched
// against the rows at the bottom of the screen's text (the last Rows rows up
// to the lower of the cursor and the last non-empty row), case-sensitively.
type Markers struct {
	// Ready: the program shows its input (a prompt marker or input box).
	// When set, the program is ready only while one is visible.
	Ready []string
	// Busy: the program works and does not take a prompt now ("esc to
	// interrupt", spinner glyphs). Busy wins over Ready (an input box stays
	// drawn while the agent works).
	Busy []string
	// Blocked: a dialog that only a person may answer (a permission prompt,
	// a login menu); hm never types into it, urgent messages included.
	// Dialogs are tall: twice Rows rows are searched for these.
	Blocked []string
	// Pasted: how the program shows a paste it collapsed instead of its
	// text ("[Pasted text #1 +20 lines]"); near the cursor after typing it
	// proves the text arrived, as the "[hm:<id>]" trailer otherwise does.
	Pasted []string
	// Queued: a line the program shows, anywhere on the screen, when it
	// queued a submitted prompt instead of taking it up ("Initializing...
	// Prompts will be queued.", Gemini CLI): it sends its queued prompts
	// later, joined as one. After hm's Enter a new one holds the pane
	// busy until the program shows a busy marker (it took the queue up).
	Queued []string
	// Rows is how many rows from the bottom are checked (default 8).
	Rows int
	// hint, built in only (settings.json cannot set it): a footer the
	// program shows for a while in place of both its ready and its busy
	// marker.
	hint *footerHint
}

// Readiness is the classification of a pane's screen.
type Readiness int

// Readiness values.
const (
	// ReadyUnknown: the profile has ready markers and none is visible (the
	// program is still starting, or drew something else).
	ReadyUnknown Readiness = iota
	// Ready: a ready marker is visible (or the profile has none), no busy
	// or blocked marker is.
	Ready
	// Busy: a busy marker is visible.
	Busy
	// Blocked: a dialog for a person is visible.
	Blocked
)

// String returns the readiness name.
func (r Readiness) String() string {
	switch r {
	case Ready:
		return "ready"
	case Busy:
		return "busy"
	case Blocked:
		return "blocked"
	}
	return "not ready"
}

// defaultMarkerRows is Markers.Rows when zero.
const defaultMarkerRows = 8

// Classify judges a screen by the profile's markers: Blocked, then Busy,
// then Ready; a profile without ready markers is Ready unless busy or
// blocked (its waiter then relies on the quiet period). marker is the
// marker that decided, if any.
func (p Profile) Classify(s Screen) (r Readiness, marker string) {
	rows := bottomRows(s, p.Screen.Rows)
	if m := findMarker(bottomRows(s, 2*max(p.Screen.Rows, defaultMarkerRows)), p.Screen.Blocked); m != "" {
		return Blocked, m
	}
	if m := findMarker(rows, p.Screen.Busy); m != "" {
		return Busy, m
	}
	if len(p.Screen.Ready) == 0 {
		return Ready, ""
	}
	if m := findMarker(rows, p.Screen.Ready); m != "" {
		if h := p.Screen.hint; h != nil && m == h.ready {
			if r := findRow(bottomRows(s, 2*max(p.Screen.Rows, defaultMarkerRows)), h.busyRow); r != "" {
				return Busy, r
			}
		}
		return Ready, m
	}
	return ReadyUnknown, ""
}

// footerHint is a footer that stands for a while in place of the program's
// ready and busy markers, whether it works or not (Claude Code's "paste
// again to expand" for some seconds after it collapsed a paste). Ready is
// its text, among the profile's ready markers; while it is the ready
// marker that matched, a row busyRow matches, searched as tall as a
// dialog, marks the program busy.
type footerHint struct {
	ready   string
	busyRow *regexp.Regexp
}

// bottomRows returns the last n rows of the screen's text, ending at the
// lower of the cursor row and the last non-empty row.
func bottomRows(s Screen, n int) []string {
	if n <= 0 {
		n = defaultMarkerRows
	}
	last := min(max(s.CursorRow, 0), len(s.Lines)-1)
	for y := len(s.Lines) - 1; y > last; y-- {
		if strings.TrimSpace(s.Lines[y]) != "" {
			last = y
			break
		}
	}
	if last < 0 {
		return nil
	}
	return s.Lines[max(0, last-n+1) : last+1]
}

func findMarker(rows, markers []string) string {
	for _, m := range markers {
		if m == "" {
			continue
		}
		for _, r := range rows {
			if strings.Contains(r, m) {
				return m
			}
		}
	}
	return ""
}

// findRow returns the first of rows re matches (nil matches none).
func findRow(rows []string, re *regexp.Regexp) string {
	if re == nil {
		return ""
	}
	for _, r := range rows {
		if re.MatchString(r) {
			return r
		}
	}
	return ""
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
	// ProfileShell is for interactive shells: they only ever get one inert
	// pointer line naming the message's file (Enter delay 30 ms).
	ProfileShell = roles.ProfileShell
	// ProfileDefault is for any other program (Enter delay 150 ms).
	ProfileDefault = roles.ProfileDefault
)

const (
	defaultIdle = 400 * time.Millisecond
	// shellIdle is the shell profile's quiet period: a shell draws its
	// prompt in one write, and what it is typed is one inert pointer line
	// the kernel's line discipline (or readline's typeahead) holds until
	// the shell reads it. The 400 ms of the TUIs, twice at start (before
	// the session line and after its prompt came back), made hm up's
	// shell panes ready 0.8 s after their first prompt (#36: ≤ 300 ms).
	shellIdle       = 100 * time.Millisecond
	defaultVerify   = 1500 * time.Millisecond
	defaultUnmarked = 15 * time.Second
	defaultEchoWait = 2 * time.Second
	defaultErase    = "\x15" // Ctrl-U: kill the input line
	escKey          = "\x1b" // Esc: Claude Code, Codex and Gemini CLI stop their work
)

// resumeFlag is Claude Code's and Gemini CLI's resume form: --resume
// takes a session id (Gemini's a UUID, "latest" or an index).
const resumeFlag = CommandPlaceholder + " --resume " + SessionPlaceholder

// spinners are the braille spinner frames that Gemini CLI and many Ink
// programs draw while they work.
var spinners = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// claudePasteHint is Claude Code's footer after it collapsed a paste. Its
// spinner row is a glyph at the row's start, a verb (its settings may
// replace the verbs) and an ellipsis, "✢ Spinning…"; once done the row
// reads "✻ Baked for 3s". Claude indents everything else it draws.
var claudePasteHint = &footerHint{ready: "paste again to expand", busyRow: regexp.MustCompile(`^[·✢✳✶✻✽*] .*…`)}

// builtinProfiles is the profile table. settings.json "profiles" entries
// (Spec.Profiles) add to it or replace entries field by field.
var builtinProfiles = map[string]Profile{
	ProfileDefault: {Name: ProfileDefault, Idle: defaultIdle, EnterDelay: 150 * time.Millisecond, Verify: defaultVerify},
	ProfileShell:   {Name: ProfileShell, Idle: shellIdle, EnterDelay: 30 * time.Millisecond, Verify: defaultVerify},
	ProfileClaude: {Name: ProfileClaude, Idle: defaultIdle, EnterDelay: 120 * time.Millisecond, Verify: defaultVerify, MultiLine: true, RawInput: true, Interrupt: escKey,
		Resume: resumeFlag,
		Screen: Markers{
			Pasted: []string{"[Pasted text #"},
			// The footer under the input box: "? for shortcuts" in the
			// default permission mode, "⏵⏵ bypass permissions on (shift+tab
			// to cycle)" and its like (accept edits, plan, auto) in the
			// others. Its prompt row, "❯", holds nothing to match once its
			// trailing blank is trimmed. For 8 s after it collapsed a
			// paste the footer is only "paste again to expand", also while
			// it works: then its spinner row tells busy (claudePasteHint).
			Ready: []string{"│ >", "? for shortcuts", "(shift+tab to cycle)", claudePasteHint.ready},
			Busy:  []string{"esc to interrupt", "esc to cancel"},
			hint:  claudePasteHint,
			Blocked: []string{"Do you want to proceed?", "Do you want to make this edit", "Do you want to create",
				"Select login method", "Do you trust the files in this folder?", "Choose the text style",
				"Press Enter to continue", "Paste code here if prompted"},
		}},
	ProfileCodex: {Name: ProfileCodex, Idle: defaultIdle, EnterDelay: 250 * time.Millisecond, Verify: defaultVerify, MultiLine: true, RawInput: true, Interrupt: escKey,
		Resume: CommandPlaceholder + " resume " + SessionPlaceholder, // its subcommand takes the flags before it (codex [flags] resume <id>)
		Screen: Markers{
			Pasted: []string{"[Pasted Content "}, // a paste over its size limit
			Ready:  []string{"⏎ send", "context left", "? for shortcuts", "▌ "},
			Busy:   []string{"esc to interrupt", "Esc to interrupt"},
			Blocked: []string{"Would you like to run the following command?", "Allow command?", "Would you like to make the following edits?",
				"Sign in with ChatGPT", "Provide your own API key", "Press Enter to continue", "allow Codex to work in this folder"},
		}},
	ProfileGemini: {Name: ProfileGemini, Idle: defaultIdle, EnterDelay: 120 * time.Millisecond, Verify: defaultVerify, MultiLine: true, RawInput: true, Interrupt: escKey,
		Resume: resumeFlag,
		Screen: Markers{
			Pasted: []string{"[Pasted Text: "}, // a paste of more than about 5 lines
			// While it initializes (or waits for its MCP servers) it queues
			// submitted prompts and sends them joined as one.
			Queued: []string{"Prompts will be queued", "prompts will be queued"},
			Ready:  []string{"Type your message", "│ > ", "> "},
			Busy:   append([]string{"esc to cancel"}, spinners...),
			Blocked: []string{"Allow execution", "Apply this change?", "Do you want to proceed?", "How would you like to authenticate", "Login with Google", "Waiting for auth",
				"Use Enter to select a message"}, // the rewind dialog a double Esc opens
		}},
}

// ProfileFor returns the built-in profile with the given name
// (case-insensitive). Unknown or empty names return the default profile.
func ProfileFor(name string) Profile {
	return lookupProfile(name, nil)
}

// lookupProfile finds name in extra (settings.json "profiles"), merged
// over the built-in profile of that name, or in the built-ins; the default
// profile when neither has it.
func lookupProfile(name string, extra map[string]Profile) Profile {
	key := strings.ToLower(strings.TrimSpace(name))
	base, ok := builtinProfiles[key]
	if !ok {
		base = builtinProfiles[ProfileDefault]
	}
	if e, found := extra[key]; found {
		if !ok {
			base.Screen = Markers{}
		}
		base = base.withOverrides(e)
		base.Name = key
	}
	return base
}

// isDefaultProfile reports whether lookupProfile(name, extra) is the
// built-in default profile: name is "default" or names no profile at all.
func isDefaultProfile(name string, extra map[string]Profile) bool {
	key := strings.ToLower(strings.TrimSpace(name))
	if key == ProfileDefault {
		return true
	}
	_, custom := extra[key]
	_, builtin := builtinProfiles[key]
	return !custom && !builtin
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
	if o.Screen.Ready != nil {
		p.Screen.Ready = o.Screen.Ready
	}
	if o.Screen.Busy != nil {
		p.Screen.Busy = o.Screen.Busy
	}
	if o.Screen.Blocked != nil {
		p.Screen.Blocked = o.Screen.Blocked
	}
	if o.Screen.Pasted != nil {
		p.Screen.Pasted = o.Screen.Pasted
	}
	if o.Screen.Queued != nil {
		p.Screen.Queued = o.Screen.Queued
	}
	if o.EchoWait > 0 {
		p.EchoWait = o.EchoWait
	}
	if o.Erase != "" {
		p.Erase = o.Erase
	}
	if o.RawInput || o.RawInputSet {
		p.RawInput = o.RawInput
	}
	if o.Interrupt != "" {
		p.Interrupt = o.Interrupt
	}
	if o.Resume != "" {
		p.Resume = o.Resume
	}
	if o.Screen.Rows > 0 {
		p.Screen.Rows = o.Screen.Rows
	}
	if o.Unmarked > 0 {
		p.Unmarked = o.Unmarked
	}
	if o.MultiLineSet {
		p.MultiLine = o.MultiLine
	}
	return p
}

// erase returns Erase or its default.
func (p Profile) erase() string {
	if p.Erase != "" {
		return p.Erase
	}
	return defaultErase
}

func (p Profile) unmarked() time.Duration {
	if p.Unmarked > 0 {
		return p.Unmarked
	}
	return defaultUnmarked
}

// ProfilesFromSettings converts settings.json "profiles" entries into
// profiles for Spec.Profiles (names lower-cased).
func ProfilesFromSettings(s map[string]roles.ProfileSettings) map[string]Profile {
	if len(s) == 0 {
		return nil
	}
	out := make(map[string]Profile, len(s))
	for name, ps := range s {
		ms := func(n int) time.Duration { return time.Duration(max(n, 0)) * time.Millisecond }
		out[strings.ToLower(strings.TrimSpace(name))] = Profile{
			Idle: ms(ps.QuietMs), EnterDelay: ms(ps.EnterDelayMs), Verify: ms(ps.VerifyMs), EchoWait: ms(ps.EchoWaitMs),
			Screen:    Markers{Ready: ps.Ready, Busy: ps.Busy, Blocked: ps.Blocked, Pasted: ps.Pasted, Queued: ps.Queued, Rows: ps.Rows},
			MultiLine: ps.MultiLine != nil && *ps.MultiLine, MultiLineSet: ps.MultiLine != nil,
			Erase: ps.Erase, Interrupt: ps.Interrupt, Resume: ps.Resume,
			RawInput: ps.RawInput != nil && *ps.RawInput, RawInputSet: ps.RawInput != nil,
		}
	}
	return out
}

// enterDelay is the pause before the first Enter: the profile's
// EnterDelay, or none while the terminal is canonical (cooked). There the
// kernel's line discipline takes the text and the Enter together and hands
// the program the finished line, so no program can see the Enter too soon.
func (p Profile) enterDelay(canonical bool) time.Duration {
	if canonical {
		return 0
	}
	return p.EnterDelay
}
