package notify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PaneState is what Waiting needs to know of a pane at one look.
type PaneState struct {
	Role, Header string
	// PID is the pane program's; a new program is a new spell.
	PID int
	// Waiting: the pane waits for a person (waiting_for_human).
	Waiting bool
	// Screen is how its profile reads its screen ("blocked: <dialog>").
	Screen string
	// Queued counts the messages held for it.
	Queued int
}

// Waiting tells when a pane has waited for a person long enough, once per
// spell. A spell starts when a pane is first seen waiting and ends only
// once the pane has not been seen waiting for Settle: a dialog that
// flickers as the screen redraws, or a pane that flaps between waiting and
// busy, is one spell, told once. A new program in the pane (another PID)
// is a new spell. Not safe for concurrent use: one watcher owns it.
type Waiting struct {
	// After is how long a spell lasts before it is told (settings.json
	// "waitingForHumanMinutes").
	After time.Duration
	// Settle is how long a pane must be seen not waiting for its spell to
	// end (DefaultSettle when 0).
	Settle time.Duration
	spells map[string]*Spell
	last   int64 // the last Observe's now (ms)
}

// DefaultSettle is Waiting.Settle's default.
const DefaultSettle = 30 * time.Second

// Spell is one pane's wait for a person.
type Spell struct {
	Role  string `json:"role"`
	PID   int    `json:"pid"`
	Since int64  `json:"since"` // ms
	// Seen is when the pane was last seen waiting (ms).
	Seen int64 `json:"seen"`
	Told bool  `json:"told"`
}

// Observe takes the panes as they are at now and returns the events of
// the spells that reached After.
func (w *Waiting) Observe(now time.Time, panes []PaneState) []Event {
	if w.spells == nil {
		w.spells = map[string]*Spell{}
	}
	settle := w.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	nowMs := now.UnixMilli()
	w.last = nowMs
	var out []Event
	seen := map[string]bool{}
	for _, p := range panes {
		seen[p.Role] = true
		sp := w.spells[p.Role]
		if sp != nil && (sp.PID != p.PID || (!p.Waiting && nowMs-sp.Seen >= settle.Milliseconds())) {
			delete(w.spells, p.Role) // another program, or the spell ended
			sp = nil
		}
		if !p.Waiting {
			continue
		}
		if sp == nil {
			sp = &Spell{Role: p.Role, PID: p.PID, Since: nowMs}
			w.spells[p.Role] = sp
		}
		sp.Seen = nowMs
		if !sp.Told && nowMs-sp.Since >= w.After.Milliseconds() {
			sp.Told = true
			out = append(out, waitingEvent(p, sp, now))
		}
	}
	for role := range w.spells {
		if !seen[role] {
			delete(w.spells, role) // the pane is gone
		}
	}
	return out
}

// Due reports whether a spell needs another look as time passes: one not
// told yet, or one whose pane was not seen waiting at the last look (it
// ends once Settle passed). A told spell whose pane still waits needs none
// until the pane changes.
func (w *Waiting) Due() bool {
	for _, sp := range w.spells {
		if !sp.Told || sp.Seen < w.last {
			return true
		}
	}
	return false
}

// waitingEvent is the event of p's spell sp at now. Its key names the
// program and the spell's start, which a restart keeps (Save, Load).
func waitingEvent(p PaneState, sp *Spell, now time.Time) Event {
	d := now.Sub(time.UnixMilli(sp.Since)).Round(time.Second)
	on := p.Screen // "blocked: <dialog marker>"
	if !strings.HasPrefix(on, "blocked") {
		on = "its CLI asked for a permission"
	}
	body := fmt.Sprintf("waited for you for %s: %s.", d, clip(on))
	if p.Queued > 0 {
		body += fmt.Sprintf(" %d message(s) held.", p.Queued)
	}
	body += " hm attach " + p.Role
	return Event{Key: "waiting:" + p.Role + ":" + strconv.Itoa(sp.PID) + ":" + strconv.FormatInt(sp.Since, 10), Kind: KindWaiting, Role: p.Role,
		Title: "hm: " + p.Role + " is waiting for you", Body: body,
		Line: fmt.Sprintf("hm: %s (%s) has %s", p.Role, p.Header, body), AtMs: now.UnixMilli()}
}

// Save returns the spells as JSON, for the next hub (Load).
func (w *Waiting) Save() string {
	list := make([]Spell, 0, len(w.spells))
	for _, sp := range w.spells {
		list = append(list, *sp)
	}
	data, _ := json.Marshal(list)
	return string(data)
}

// Load takes the spells a hub saved at its stop: a pane whose program (the
// same PID, adopted by this hub) still waits continues its spell, told or
// not, so a restart does not tell it again.
func (w *Waiting) Load(saved string) error {
	var list []Spell
	if err := json.Unmarshal([]byte(saved), &list); err != nil {
		return fmt.Errorf("load waiting spells: %w", err)
	}
	w.spells = map[string]*Spell{}
	for _, sp := range list {
		w.spells[sp.Role] = &sp
	}
	return nil
}
