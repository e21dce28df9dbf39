package roles

import (
	"fmt"
	"strings"
)

// paneSettings is one settings.json "panes" entry as written (SPEC §3),
// before build resolves it into a Member.
type paneSettings struct {
	Role      string `json:"role"`
	ID        string `json:"id"`
	Header    string `json:"header"`
	Command   string `json:"command"`
	Profile   string `json:"profile"`
	Transport string `json:"transport"`
}

type backgroundSettings struct {
	Owner   string `json:"owner"`
	Max     *int   `json:"max"` // absent: 3; 0 turns the slots off
	Command string `json:"command"`
	IdleTTL string `json:"idleTTL"`
}

type settings struct {
	Port       int                        `json:"port"`
	Panes      []paneSettings             `json:"panes"`
	Background *backgroundSettings        `json:"background"`
	Telegram   *Telegram                  `json:"telegram"`
	SecretEnv  []string                   `json:"secretEnv"`
	Profiles   map[string]ProfileSettings `json:"profiles"`
	// LaunchWiring false: hm adds no launch flags to the commands of the
	// panes it launches (internal/launchwire).
	LaunchWiring *bool `json:"launchWiring"`
	Triggers     *struct {
		AllowUnsigned *bool `json:"allowUnsigned"`
	} `json:"triggers"`
	WaitingForHumanMinutes *float64 `json:"waitingForHumanMinutes"`
	// Pprof true serves net/http/pprof at /debug/pprof/ (as `hm up
	// --pprof` does).
	Pprof bool  `json:"pprof"`
	NATS  *NATS `json:"nats"`
}

// knownProfile reports whether name (lower-cased, trimmed) is a built-in
// profile or one the settings' "profiles" section defines.
func knownProfile(name string, defined map[string]ProfileSettings) bool {
	switch name {
	case ProfileClaude, ProfileCodex, ProfileGemini, ProfileShell, ProfileDefault:
		return true
	}
	for k := range defined {
		if strings.ToLower(strings.TrimSpace(k)) == name {
			return true
		}
	}
	return false
}

func isReserved(role string) bool {
	_, alias := Aliases[role]
	return isSpecial(role) || alias
}

// isSpecial reports whether name (lower-case) is a special target or
// sender that is no team member.
func isSpecial(name string) bool {
	switch name {
	case RoleUser, RoleSystem, RoleTelegram, RoleAll, RoleUnverified, "workers":
		return true
	}
	return false
}

// checkNames refuses a member header or pane id that is a special name
// (a message to it would not reach the member, one with it as header would
// be attributed to someone else) or an alias of another role.
func checkNames(m Member) error {
	for _, n := range [...]struct{ what, name string }{{"header", m.Header}, {"id", m.PaneID}} {
		key := strings.ToLower(n.name)
		if isSpecial(key) {
			return fmt.Errorf("pane %q: %s %q is reserved (user, system, telegram, all, unverified, workers)", m.Role, n.what, n.name)
		}
		if role, ok := Aliases[key]; ok && role != m.Role {
			return fmt.Errorf("pane %q: %s %q is an alias of %s", m.Role, n.what, n.name, role)
		}
	}
	return nil
}
