package federation

import (
	"fmt"
	"strings"
)

// validToken reports whether s can be one NATS subject token (and a part of
// a stream or consumer name): ASCII letters, digits, '-' and '_', 1 to 64.
func validToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Subjects names the team's stream and subjects.
type Subjects struct{ team string }

// NewSubjects checks team (a NATS token: letters, digits, '-', '_').
func NewSubjects(team string) (Subjects, error) {
	if !validToken(team) {
		return Subjects{}, fmt.Errorf("federation: team %q: 1-64 ASCII letters, digits, '-' or '_'", team)
	}
	return Subjects{team: team}, nil
}

// Stream is the stream's name, HM_<TEAM>.
func (s Subjects) Stream() string { return "HM_" + strings.ToUpper(s.team) }

// All is the stream's subject filter, hm.<team>.>.
func (s Subjects) All() string { return "hm." + s.team + ".>" }

// To is where messages for role are published, hm.<team>.to.<role>.
func (s Subjects) To(role string) string { return "hm." + s.team + ".to." + role }

// Presence is hub's presence subject, hm.<team>.presence.<hub>.
func (s Subjects) Presence(hub string) string { return "hm." + s.team + ".presence." + hub }

// PresenceAll matches every hub's presence.
func (s Subjects) PresenceAll() string { return "hm." + s.team + ".presence.*" }

// hubOfPresence is the hub token of a presence subject, or "".
func (s Subjects) hubOfPresence(subject string) string {
	prefix := "hm." + s.team + ".presence."
	if !strings.HasPrefix(subject, prefix) {
		return ""
	}
	return subject[len(prefix):]
}
