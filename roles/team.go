package roles

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"hm/internal/ground/status"
)

// Transports a team member can use.
const (
	TransportPTY = "pty" // hosted by the hub in a pseudo-terminal
	TransportWS  = "ws"  // an external program that registers with listen:true
	// TransportRemote: another hub of the team hosts the role; messages
	// for it go through NATS JetStream (hm up --nats, docs/protocol.md §16).
	TransportRemote = "remote"
)

// Special identities that are not team members.
const (
	RoleUser     = "user"     // the human (operator CLI, trigger files without a header, Telegram)
	RoleSystem   = "system"   // the hub itself (reminders, notices)
	RoleTelegram = "telegram" // the Telegram chat as a target
	RoleAll      = "all"      // broadcast target
	// OthersPrefix starts the group target others-<role>: every main pane
	// but role (and the sender). See OthersTarget and CutOthers.
	OthersPrefix = "others-"
	// RoleWorkers is the trigger-file group target that stands for the
	// builder (SPEC §7: workers.txt). See ExpandWorkers.
	RoleWorkers = "workers"
	// RoleUnverified is the recorded sender of an unsigned trigger file.
	RoleUnverified = "unverified"
)

// ErrInvalidTarget is returned for a target that names nobody.
var ErrInvalidTarget = errors.New(string(status.CodeInvalidTarget))

// Member is one agent of the team.
type Member struct {
	Role      string // lower-case role name, e.g. "architect", "builder-bg-2"
	PaneID    string // "1", "bg-2-1"
	Header    string // upper-case header name, e.g. "ARCH"
	Command   string // shell command line, run with /bin/sh -c
	Profile   string // injection timing profile
	Transport string // pty or ws
	// Background members are the owner's on-demand slots.
	Background bool
	Owner      string // role of the owner, for background members
	Slot       int    // 1-based slot number, for background members
}

// Background configures the owner-bound background slots.
type Background struct {
	Owner   string
	Max     int
	Command string
	IdleTTL time.Duration
}

// Telegram is the settings.json telegram section.
type Telegram struct {
	ChatID    string   `json:"chatId"`
	Allowlist []string `json:"allowlist"`
}

// Triggers configures the trigger-directory fallback (SPEC §7).
type Triggers struct {
	// AllowUnsigned lets files without an [HM-SIG:] line in, recorded with
	// sender "unverified" (default true, for older tools).
	AllowUnsigned bool
}

// Team is the resolved team definition.
type Team struct {
	// Warnings name what settings.json holds that hm ignored (unknown
	// keys); hm up logs them.
	Warnings   []string
	Port       int
	Background Background
	Telegram   Telegram
	// NoLaunchWiring: settings.json "launchWiring": false; pane commands
	// are run as written, without hm's MCP and hook launch flags.
	NoLaunchWiring bool
	// SecretEnv names more environment variables kept out of panes (see
	// IsSecretEnv); a name ending in * is a prefix.
	SecretEnv []string
	// Triggers is the settings.json "triggers" section.
	Triggers Triggers
	// WaitingNotice is how long a pane waits for a person
	// (waiting_for_human) before the human gets one Telegram line about it:
	// settings.json "waitingForHumanMinutes", default
	// DefaultWaitingNotice; 0 there turns the line off (WaitingNotice 0).
	WaitingNotice time.Duration
	// PaneKeep is how long a pane's keeper holds its program after the hub
	// is gone (killed, crashed) for the next hub to adopt it:
	// settings.json "paneKeepMinutes", default DefaultPaneKeep; 0 there:
	// no adoption, the keeper hangs the program up after agent.KeeperGrace.
	PaneKeep time.Duration
	// Pprof: settings.json "pprof": true; the hub serves net/http/pprof's
	// profiles at /debug/pprof/ to the operator (as `hm up --pprof`).
	Pprof bool
	// NATS is the settings.json "nats" section: federation through NATS
	// JetStream (as hm up --nats, --nats-creds, --team; flags win).
	NATS NATS
	// Notifications is the settings.json "notifications" section: how
	// the person at the machine is told (internal/notify).
	Notifications Notifications
	// Profiles is the settings.json "profiles" section: pane profiles added
	// to the built-in table or overriding its entries field by field.
	Profiles map[string]ProfileSettings
	main     []Member
	bg       []Member
	index    map[string]int // key -> position in all()
	// derivedIDs are the roles whose pane id settings.json does not give:
	// their place in the panes list (KeepPaneIDs).
	derivedIDs map[string]bool
}

// ProfileSettings is one settings.json "profiles" entry: timing and the
// screen markers that tell when the program is ready, busy or showing a
// dialog for a person (SPEC §6). Zero or absent fields keep the built-in
// profile's value.
type ProfileSettings struct {
	QuietMs      int      `json:"quietMs"`
	EnterDelayMs int      `json:"enterDelayMs"`
	VerifyMs     int      `json:"verifyMs"`
	Ready        []string `json:"ready"`
	Busy         []string `json:"busy"`
	Blocked      []string `json:"blocked"`
	Rows         int      `json:"rows"`
	// MultiLine: the program takes a multi-line bracketed paste as one
	// prompt (absent keeps the built-in profile's value).
	MultiLine *bool `json:"multiLine"`
	// EchoWaitMs bounds the wait for typed text to show on the screen.
	EchoWaitMs int `json:"echoWaitMs"`
	// Pasted are the markers of a paste the program shows collapsed.
	Pasted []string `json:"pasted"`
	// Queued are the lines a program shows when it queued a submitted
	// prompt instead of taking it up (it sends its queue joined later).
	Queued []string `json:"queued"`
	// Erase clears a typed line that never showed (default Ctrl-U);
	// Interrupt stops a busy program for an [URGENT] message (e.g. "\u001b").
	Erase     string `json:"erase"`
	Interrupt string `json:"interrupt"`
	// RawInput: the program reads its prompt in raw mode; hm types nothing
	// while the terminal is still canonical (absent keeps the built-in
	// profile's value).
	RawInput *bool `json:"rawInput"`
	// Resume is the command line that resumes the CLI's session after its
	// program ended: "{command}" is the pane's command, "{session}" the
	// session id its hooks reported (agent.Profile.Resume). Without
	// "{session}" (e.g. "{command}") the program restarts blank.
	Resume string `json:"resume"`
}

// NATS is the settings.json "nats" section (docs/protocol.md §16).
type NATS struct {
	URL   string `json:"url"`
	Creds string `json:"creds"`
	Team  string `json:"team"`
	// Hub names this hub when it has no credentials (default: host name).
	Hub string `json:"hub"`
}

// Notifications is the settings.json "notifications" section (issue #34):
// a message to the person, an answer they are asked for or owed, a pane
// waiting for them and a stuck message are told on the desktop and in the
// hub's terminal.
type Notifications struct {
	// Desktop false turns desktop notifications off; absent or true runs
	// Command, else the system's notifier (notify-send, or osascript on
	// macOS) where one is found.
	Desktop *bool `json:"desktop"`
	// Command is a shell command line run with the title and the body
	// as its two arguments (e.g. "notify-send -u critical").
	Command string `json:"command"`
	// Terminal false turns off the bell and OSC 9 notification in the
	// hub's terminal (only ever written when it is a terminal).
	Terminal *bool `json:"terminal"`
}

// DesktopOn reports whether desktop notifications are on.
func (n Notifications) DesktopOn() bool { return n.Desktop == nil || *n.Desktop }

// TerminalOn reports whether the hub's terminal gets notifications.
func (n Notifications) TerminalOn() bool { return n.Terminal == nil || *n.Terminal }

// DefaultWaitingNotice is Team.WaitingNotice without settings.
const DefaultWaitingNotice = 5 * time.Minute

// DefaultPaneKeep is Team.PaneKeep without settings.
const DefaultPaneKeep = 10 * time.Minute

// minutes reads the settings.json number of minutes named name: def when
// absent, 0 (off) or more, a negative number refused.
func minutes(name string, m *float64, def time.Duration) (time.Duration, error) {
	if m == nil {
		return def, nil
	}
	if *m < 0 {
		return 0, fmt.Errorf("%s %v: want 0 (off) or more", name, *m)
	}
	return time.Duration(*m * float64(time.Minute)), nil
}

// Aliases maps alternative target names to roles.
var Aliases = map[string]string{
	"arch": RoleArchitect, "lead": RoleArchitect, "director": RoleArchitect,
	"devops": "builder", "orchestrator": "builder", "infra": "builder", "infrastructure": "builder",
	"backend": "builder", "back": "builder", "worker-b": "builder", "implementer-b": "builder",
	"analyst": "oracle", "ana": "oracle", "investigator": "oracle",
}

// DefaultShell is the command used for panes with no configured command.
func DefaultShell() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return sh
	}
	return "/bin/sh"
}

func defaultMembers() []Member {
	sh := DefaultShell()
	return []Member{
		{Role: RoleArchitect, PaneID: "1", Header: "ARCH", Command: sh, Profile: "shell", Transport: TransportPTY},
		{Role: "builder", PaneID: "2", Header: "BUILDER", Command: sh, Profile: "shell", Transport: TransportPTY},
		{Role: "oracle", PaneID: "3", Header: "ORACLE", Command: sh, Profile: "shell", Transport: TransportPTY},
	}
}

// Default returns the team of SPEC §3, used when settings.json is absent.
func Default() *Team {
	t, err := build(settings{})
	if err != nil {
		panic(err) // the default team is always valid
	}
	return t
}

// Demo returns the tour's team (hm up --demo, make run): the default
// team's three panes, each running a line reader instead of a shell. A
// shell pane only ever gets an inert pointer line (SPEC §6), so a person
// watching it never reads a message; the reader takes each message as
// typed text (profile default), and the terminal's echo shows it on the
// pane's screen. The reader only reads: no line is ever run as a command.
func Demo() *Team {
	t := Default()
	for i := range t.main {
		m := &t.main[i]
		m.Command = DemoCommand(m.Role)
		m.Profile = ProfileDefault
	}
	return t
}

// DemoCommand is a demo pane's program: a prompt naming the role, then one
// line read per message, as data.
func DemoCommand(role string) string {
	return "while printf '%s> ' " + role + "; IFS= read -r line; do :; done"
}

func build(s settings) (*Team, error) {
	members := defaultMembers()
	listed, derived := map[string]bool{}, map[string]bool{}
	for _, p := range s.Panes {
		role := strings.ToLower(strings.TrimSpace(p.Role))
		if !ValidName(role) {
			return nil, fmt.Errorf("pane role %q: letters, digits and single hyphens only", p.Role)
		}
		if isReserved(role) {
			return nil, fmt.Errorf("pane role %q is reserved", role)
		}
		if listed[role] {
			return nil, fmt.Errorf("pane role %q is listed twice in panes: give each role one entry", role)
		}
		listed[role] = true
		pos := -1
		for i := range members {
			if members[i].Role == role {
				pos = i
			}
		}
		if pos < 0 {
			members = append(members, Member{Role: role, Transport: TransportPTY, Profile: InferProfile(DefaultShell()), Command: DefaultShell()})
			pos = len(members) - 1
		}
		m := &members[pos]
		if p.ID != "" {
			m.PaneID = p.ID
		}
		if p.Header != "" {
			m.Header = strings.ToUpper(p.Header)
		}
		if p.Command != "" {
			m.Command = p.Command
			if p.Profile == "" {
				m.Profile = InferProfile(p.Command)
			}
		}
		if p.Profile != "" { // an explicit profile always wins
			prof := strings.ToLower(strings.TrimSpace(p.Profile))
			if !knownProfile(prof, s.Profiles) {
				return nil, fmt.Errorf("pane %q: profile %q is not %s, %s, %s, %s, %s or a name in settings.json \"profiles\"",
					role, p.Profile, ProfileClaude, ProfileCodex, ProfileGemini, ProfileShell, ProfileDefault)
			}
			m.Profile = prof
		}
		if p.Transport != "" {
			tr := strings.ToLower(p.Transport)
			if tr != TransportPTY && tr != TransportWS && tr != TransportRemote {
				return nil, fmt.Errorf("pane %q: transport %q is not pty, ws or remote", role, p.Transport)
			}
			m.Transport = tr
		}
		if m.Header == "" {
			m.Header = strings.ToUpper(role)
		}
		if m.PaneID == "" {
			m.PaneID = strconv.Itoa(len(members))
			derived[role] = true
		}
		if !ValidName(m.Header) {
			return nil, fmt.Errorf("pane %q: header %q: letters, digits and single hyphens only", role, m.Header)
		}
	}
	for _, m := range members {
		if err := checkNames(m); err != nil {
			return nil, err
		}
	}
	t := &Team{Port: s.Port, SecretEnv: s.SecretEnv, Profiles: s.Profiles, main: members, derivedIDs: derived, Triggers: Triggers{AllowUnsigned: true}}
	t.NoLaunchWiring = s.LaunchWiring != nil && !*s.LaunchWiring
	t.Pprof = s.Pprof
	if s.Notifications != nil {
		t.Notifications = *s.Notifications
	}
	if s.NATS != nil {
		t.NATS = *s.NATS
	}
	if s.Triggers != nil && s.Triggers.AllowUnsigned != nil {
		t.Triggers.AllowUnsigned = *s.Triggers.AllowUnsigned
	}
	if t.Port == 0 {
		t.Port = 9900
	}
	var err error
	if t.WaitingNotice, err = minutes("waitingForHumanMinutes", s.WaitingForHumanMinutes, DefaultWaitingNotice); err != nil {
		return nil, err
	}
	if t.PaneKeep, err = minutes("paneKeepMinutes", s.PaneKeepMinutes, DefaultPaneKeep); err != nil {
		return nil, err
	}
	bg := Background{Owner: "builder", Max: 3, IdleTTL: 20 * time.Minute}
	if b := s.Background; b != nil {
		if b.Owner != "" {
			bg.Owner = strings.ToLower(b.Owner)
		}
		if b.Max != nil {
			bg.Max = *b.Max
		}
		bg.Command = b.Command
		if b.IdleTTL != "" {
			d, err := time.ParseDuration(b.IdleTTL)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("background idleTTL %q: not a positive duration", b.IdleTTL)
			}
			bg.IdleTTL = d
		}
	}
	if bg.Max < 0 || bg.Max > 9 {
		return nil, fmt.Errorf("background max %d: must be 0..9", bg.Max)
	}
	owner, ok := t.findMain(bg.Owner)
	if !ok {
		return nil, fmt.Errorf("background owner %q is not a pane", bg.Owner)
	}
	// Slots run the owner's command with the owner's profile, or their own
	// command with the profile it implies (background has no profile key).
	bgProfile := owner.Profile
	if bg.Command == "" {
		bg.Command = owner.Command
	} else if bg.Command != owner.Command {
		bgProfile = InferProfile(bg.Command)
	}
	t.Background = bg
	for i := 1; i <= bg.Max; i++ {
		t.bg = append(t.bg, Member{
			Role:       fmt.Sprintf("%s-bg-%d", owner.Role, i),
			PaneID:     fmt.Sprintf("bg-%s-%d", owner.PaneID, i),
			Header:     fmt.Sprintf("%s-BG-%d", owner.Header, i),
			Command:    bg.Command,
			Profile:    bgProfile,
			Transport:  TransportPTY,
			Background: true,
			Owner:      owner.Role,
			Slot:       i,
		})
	}
	if s.Telegram != nil {
		t.Telegram = *s.Telegram
	}
	if err := t.buildIndex(); err != nil {
		return nil, err
	}
	return t, nil
}

// WithBackgroundOf returns a copy of t whose background slots are from's
// (Background and the slot members), for a hub that keeps its slots as
// they are until it restarts (hm reload). It fails when from's slot owner
// is not a pane of t, or a slot's name is one of t's members'.
func (t *Team) WithBackgroundOf(from *Team) (*Team, error) {
	c := *t
	c.Background, c.bg = from.Background, slices.Clone(from.bg)
	if len(c.bg) > 0 {
		if _, ok := c.findMain(c.Background.Owner); !ok {
			return nil, fmt.Errorf("background owner %q is not a pane", c.Background.Owner)
		}
	}
	if err := c.buildIndex(); err != nil {
		return nil, err
	}
	return &c, nil
}

// KeepPaneIDs returns a copy of t in which each pane whose id is derived
// from its place in the panes list keeps the id it has in old, where no
// other pane of t has that id: a pane removed from the list, or one
// inserted before it, does not change the ids of the panes after it (hm
// reload would restart them: the id is in their environment). A new
// pane whose derived id another pane keeps gets the lowest free number.
func (t *Team) KeepPaneIDs(old *Team) (*Team, error) {
	c := *t
	c.main = slices.Clone(t.main)
	taken := map[string]bool{}
	for _, m := range c.main {
		if !c.derivedIDs[m.Role] {
			taken[strings.ToLower(m.PaneID)] = true
		}
	}
	// The panes old has keep their ids first, then the others keep the
	// one derived now, or get the lowest free number.
	kept := map[int]bool{}
	for i := range c.main {
		m := &c.main[i]
		if o, ok := old.findMain(m.Role); ok && c.derivedIDs[m.Role] && !taken[strings.ToLower(o.PaneID)] {
			m.PaneID, kept[i] = o.PaneID, true
			taken[strings.ToLower(o.PaneID)] = true
		}
	}
	for i := range c.main {
		m := &c.main[i]
		if !c.derivedIDs[m.Role] || kept[i] {
			continue
		}
		if taken[strings.ToLower(m.PaneID)] {
			n := 1
			for taken[strconv.Itoa(n)] {
				n++
			}
			m.PaneID = strconv.Itoa(n)
		}
		taken[strings.ToLower(m.PaneID)] = true
	}
	if err := c.buildIndex(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (t *Team) findMain(role string) (Member, bool) {
	for _, m := range t.main {
		if m.Role == role {
			return m, true
		}
	}
	return Member{}, false
}

// member is all()[i] without copying every member.
func (t *Team) member(i int) Member {
	if i < len(t.main) {
		return t.main[i]
	}
	return t.bg[i-len(t.main)]
}

func (t *Team) all() []Member {
	out := make([]Member, 0, len(t.main)+len(t.bg))
	out = append(out, t.main...)
	return append(out, t.bg...)
}

func (t *Team) buildIndex() error {
	t.index = map[string]int{}
	for i, m := range t.all() {
		for _, k := range []string{m.Role, strings.ToLower(m.PaneID), strings.ToLower(m.Header)} {
			if j, dup := t.index[k]; dup && j != i {
				return fmt.Errorf("team: name %q used by two members", k)
			}
			t.index[k] = i
		}
	}
	return nil
}

// RoleArchitect leads every team: settings.json's panes are merged into
// the default team (build), so no team is without one. The person's
// Telegram messages and the startup briefing go to it (SPEC §11).
const RoleArchitect = "architect"

// Members returns the main (non-background) members in pane order.
func (t *Team) Members() []Member { return append([]Member(nil), t.main...) }

// BackgroundMembers returns the background slots in slot order.
func (t *Team) BackgroundMembers() []Member { return append([]Member(nil), t.bg...) }

// Lookup finds a member by role name, pane id or header name (case-insensitive).
// Aliases are not considered; use Resolve for targets.
func (t *Team) Lookup(name string) (Member, bool) {
	i, ok := t.index[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Member{}, false
	}
	return t.member(i), true
}

// Roles returns every member's role name, main members first.
func (t *Team) Roles() []string {
	var out []string
	for _, m := range t.all() {
		out = append(out, m.Role)
	}
	return out
}

// TargetKind says what a resolved target addresses.
type TargetKind int

// Target kinds.
const (
	TargetMember   TargetKind = iota + 1 // one team member (Target.Member)
	TargetAll                            // every main pane except the sender
	TargetUser                           // the human
	TargetTelegram                       // the configured Telegram chat
)

// Target is a resolved message target.
type Target struct {
	Kind   TargetKind
	Member Member // for TargetMember
}

// Name is the canonical target name stored in the ledger.
func (t Target) Name() string {
	switch t.Kind {
	case TargetAll:
		return RoleAll
	case TargetUser:
		return RoleUser
	case TargetTelegram:
		return RoleTelegram
	}
	return t.Member.Role
}

// Resolve maps a target name (role, pane id, header, background alias or pane
// id, alias, all, user, telegram), case-insensitively, to a Target.
func (t *Team) Resolve(name string) (Target, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	switch key {
	case RoleAll:
		return Target{Kind: TargetAll}, nil
	case RoleUser:
		return Target{Kind: TargetUser}, nil
	case RoleTelegram:
		return Target{Kind: TargetTelegram}, nil
	}
	if role, ok := Aliases[key]; ok {
		if m, ok := t.Lookup(role); ok {
			return Target{Kind: TargetMember, Member: m}, nil
		}
	}
	if m, ok := t.Lookup(key); ok {
		return Target{Kind: TargetMember, Member: m}, nil
	}
	return Target{}, t.unknownTarget(name)
}

// HeaderFor returns the header name for a sender role: the member's header,
// "USER" for the human and "SYSTEM" for the hub.
func (t *Team) HeaderFor(role string) string {
	if m, ok := t.Lookup(role); ok && m.Role == role {
		return m.Header
	}
	return strings.ToUpper(role)
}

// RoleForHeader maps a header name to the sender role it stands for.
func (t *Team) RoleForHeader(header string) (string, bool) {
	h := strings.ToUpper(header)
	switch h {
	case "USER":
		return RoleUser, true
	case "SYSTEM":
		return RoleSystem, true
	}
	for _, ms := range [...][]Member{t.main, t.bg} {
		for _, m := range ms {
			if m.Header == h {
				return m.Role, true
			}
		}
	}
	return "", false
}

// OthersTarget returns the group target others-<role>.
func OthersTarget(role string) string { return OthersPrefix + role }

// CutOthers returns role from the group target others-<role>; ok is false
// for any other target.
func CutOthers(target string) (role string, ok bool) {
	if role, ok = strings.CutPrefix(target, OthersPrefix); !ok {
		return "", false
	}
	return role, true
}

// ExpandWorkers returns the target a trigger file's target stands for: the
// builder for RoleWorkers, any other target itself.
func ExpandWorkers(target string) string {
	if target == RoleWorkers {
		return "builder"
	}
	return target
}

// Others returns the main members other than role, in pane order.
func (t *Team) Others(role string) []Member {
	var out []Member
	for _, m := range t.main {
		if m.Role != role {
			out = append(out, m)
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
