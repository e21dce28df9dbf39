package report

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"hm/roles"
)

// Section limits: how many rows each part of a document shows at most.
const (
	// HandoffRecentLimit is the number of messages in the handoff's
	// Recent Messages section.
	HandoffRecentLimit = 100
	// HandoffListLimit bounds the handoff's obligation, signal, failed
	// and pending tables.
	HandoffListLimit = 100
	// BriefingRecentLimit is the number of messages in the briefing's
	// last-messages table.
	BriefingRecentLimit = 30
	// BriefingListLimit bounds the briefing's failed, pending,
	// obligation and unresolved-signal tables.
	BriefingListLimit = 50
	// BriefingDecisionLimit bounds the briefing's recent decisions.
	BriefingDecisionLimit = 20
	// countCap bounds counts that are not restricted to one session
	// (pending per role): larger counts render as "10000+".
	countCap = 10000
	// maxSessions bounds the distinct sessions examined to find the
	// previous one.
	maxSessions = 100000
)

// ErrNoLedger is returned when Briefing or Handoff get a nil ledger.
var ErrNoLedger = errors.New("report: no ledger")

// RoleInfo describes one team member for the per-role lines of the
// documents.
type RoleInfo struct {
	Role   string // role name as stored in the ledger, e.g. "architect"
	Header string // header name, e.g. "ARCH"
	PaneID string // pane id, e.g. "1" or "bg-2-1"
	// Program says how the role's pane's program came to be, in the hub's
	// words (agent.Status.OriginWords: "started", "adopted", "restarted
	// (1 restart)", "resumed (…)"); "" for a role no pane of the hub
	// hosts. The handoff's role table shows it when any role has one.
	Program string
}

// Options selects the session a document is about and supplies the few
// inputs that are not in the ledger.
type Options struct {
	// SessionID is the current session, e.g. "app-session-7". For the
	// briefing it is the session that is starting; its previous session
	// is the highest-numbered other session in the ledger. For the
	// handoff it is the session being handed off. When empty, Session
	// is used ("app-session-<Session>"); when both are unset the
	// handoff covers the highest-numbered session in the ledger.
	SessionID string
	// Session is the session number; it is derived from SessionID when
	// zero.
	Session int
	// Now is the briefing's clock (date line and ages); zero means
	// time.Now(). The handoff never uses it.
	Now time.Time
	// Roles is the team, in display order, for per-role lines. Optional:
	// senders found in the ledger are listed either way.
	Roles []RoleInfo
}

// sessionID returns the current session id ("" when unknown).
func (o Options) sessionID() string {
	if o.SessionID != "" {
		return o.SessionID
	}
	if o.Session > 0 {
		return roles.SessionID(o.Session)
	}
	return ""
}

// sessionNumber returns the current session number, 0 when unknown.
func (o Options) sessionNumber() int {
	if o.Session > 0 {
		return o.Session
	}
	n, _ := roles.SessionNumber(o.SessionID)
	return n
}

// RolesFromTeam lists a team's members (main panes first, then background
// slots) as RoleInfo, for Options.Roles.
func RolesFromTeam(t *roles.Team) []RoleInfo {
	if t == nil {
		return nil
	}
	var out []RoleInfo
	for _, m := range append(t.Members(), t.BackgroundMembers()...) {
		out = append(out, RoleInfo{Role: m.Role, Header: m.Header, PaneID: m.PaneID})
	}
	return out
}

// SessionLine returns the first line of a pane's first message:
// "# SQUIDRUN SESSION: Architect - Started 2026-11-22". The role is
// title-cased per hyphen-separated word ("builder-bg-1" gives
// "Builder-Bg-1"); the date is now's calendar date in now's location.
func SessionLine(role string, now time.Time) string {
	return "# SQUIDRUN SESSION: " + titleRole(role) + " - Started " + now.Format("2006-01-02")
}

// ArchitectFirstMessage is the architect pane's first message: its session
// line, a blank line, then the briefing.
func ArchitectFirstMessage(briefing []byte, now time.Time) string {
	return SessionLine("architect", now) + "\n\n" + string(briefing)
}

// PaneFirstMessage is the first message of every pane other than the
// architect's: its session line and a pointer to the session handoff at
// sessionPath (normally .squidrun/handoffs/session.md).
func PaneFirstMessage(role string, now time.Time, sessionPath string) string {
	return SessionLine(role, now) + "\n\n" +
		"Read the session handoff at " + sessionPath +
		" for context: open obligations, tagged signals (DECISION/TASK/FINDING/BLOCKER), failed and pending deliveries, and recent messages.\n"
}

// titleRole upper-cases the first letter of every word of role and
// lower-cases the rest; words are separated by anything that is not a
// letter or digit.
func titleRole(role string) string {
	role = strings.TrimSpace(role)
	if role == "" {
		return "Agent"
	}
	var b strings.Builder
	b.Grow(len(role))
	start := true
	for _, r := range role {
		switch {
		case unicode.IsLetter(r):
			if start {
				b.WriteRune(unicode.ToUpper(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
			start = false
		case unicode.IsDigit(r):
			b.WriteRune(r)
			start = false
		default:
			b.WriteRune(r)
			start = true
		}
	}
	return b.String()
}

// CellMaxRunes is the longest cell content Cell keeps; longer content is cut
// and ends with CellMarker.
const CellMaxRunes = 180

// CellMarker ends a cell that Cell cut short.
const CellMarker = "…"

// Cell makes s safe for one markdown table cell: runs of whitespace
// (including newlines) become one space, leading and trailing whitespace
// and other control characters are dropped, the result is cut at
// CellMaxRunes runes (then CellMarker is appended) and every '|' is escaped
// as `\|`. Invalid UTF-8 becomes U+FFFD.
func Cell(s string) string {
	var buf [CellMaxRunes + 1]rune
	rs := buf[:0]
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = len(rs) > 0
			continue
		}
		if unicode.IsControl(r) {
			continue
		}
		if space {
			rs = append(rs, ' ')
			space = false
		}
		if len(rs) >= CellMaxRunes {
			rs = append(rs, r) // one past the limit: mark as cut
			break
		}
		rs = append(rs, r)
	}
	cut := len(rs) > CellMaxRunes
	if cut {
		rs = rs[:CellMaxRunes]
		for len(rs) > 0 && rs[len(rs)-1] == ' ' {
			rs = rs[:len(rs)-1]
		}
	}
	var b strings.Builder
	b.Grow(len(rs) + len(CellMarker) + 8)
	for _, r := range rs {
		if r == '|' {
			b.WriteString(`\|`)
			continue
		}
		b.WriteRune(r)
	}
	if cut {
		b.WriteString(CellMarker)
	}
	return b.String()
}
