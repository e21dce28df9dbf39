package roles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	// PaneKeepMinutes is Team.PaneKeep.
	PaneKeepMinutes *float64 `json:"paneKeepMinutes"`
	// Pprof true serves net/http/pprof at /debug/pprof/ (as `hm up
	// --pprof` does).
	Pprof         bool           `json:"pprof"`
	NATS          *NATS          `json:"nats"`
	Notifications *Notifications `json:"notifications"`
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
	case RoleUser, RoleSystem, RoleTelegram, RoleAll, RoleUnverified, RoleWorkers:
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

// Load reads settings.json at path. A missing file gives the default team.
func Load(path string) (*Team, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	return t, nil
}

// Parse builds a team from settings.json content. Pane entries override the
// default member with the same role; new roles are added.
// A key Parse does not know is ignored, and named in Team.Warnings (a
// misspelt "comand" would otherwise run $SHELL without a word); it is not
// refused, since SquidRun's settings.json, at the same path, has keys of
// its own.
func Parse(data []byte) (*Team, error) {
	var s settings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse settings: %w", err)
	}
	t, err := build(s)
	if err != nil {
		return nil, err
	}
	t.Warnings = unknownKeys(data)
	return t, nil
}

// unknownKeys names the keys of data settings does not have, at any
// level, as warnings. encoding/json stops at the first, so the document is
// decoded again with each key found dropped, up to a few.
func unknownKeys(data []byte) []string {
	var warnings []string
	for range 8 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var s settings
		err := dec.Decode(&s)
		name, ok := strings.CutPrefix(fmt.Sprint(err), `json: unknown field "`)
		if err == nil || !ok {
			break
		}
		name = strings.TrimSuffix(name, `"`)
		warnings = append(warnings, fmt.Sprintf("settings.json: unknown key %q ignored (misspelt?)", name))
		next, changed := dropKey(data, name)
		if !changed {
			break
		}
		data = next
	}
	return warnings
}

// dropKey removes every member named name from every object of the JSON
// document data.
func dropKey(data []byte, name string) ([]byte, bool) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return data, false
	}
	changed := false
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x[name]; ok {
				delete(x, name)
				changed = true
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return data, false
	}
	return out, changed
}
