package realcli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"hm/agent"
	"hm/internal/ground/status"
	"hm/internal/realcli/model"
)

// What the model got, judged from its recorded requests.

// contextIntro starts the part of a hook's output that holds messages
// (internal/hook: "hm: 2 messages for you (builder) arrived …").
var contextIntro = regexp.MustCompile(`hm: (1 message|\d+ messages) for `)

// sighting is one main turn whose new content holds a message's trailer.
type sighting struct {
	seq     int    // the request's Seq
	part    string // the text part holding it
	context bool   // it came in a hook's output, not typed
	merged  bool   // typed in one prompt with another hm message
}

// sightings finds the main turns whose new content holds [hm:<id>].
func sightings(reqs []model.Request, id string) []sighting {
	trailer := agent.Trailer(id)
	var out []sighting
	for _, r := range reqs {
		if !r.Main {
			continue
		}
		for _, p := range r.Texts {
			i := strings.Index(p, trailer)
			if i < 0 {
				continue
			}
			if len(out) > 0 && !slices.ContainsFunc(r.Turn, func(t string) bool { return strings.Contains(t, trailer) }) {
				// History the turn before lacked (a resumed Gemini CLI's
				// conversation, after a turn sent without it): a copy
				// the model got again comes in a turn's own texts.
				continue
			}
			typed := p
			if loc := contextIntro.FindStringIndex(p); loc != nil {
				typed = p[:loc[0]]
			}
			s := sighting{seq: r.Seq, part: p, context: i >= len(typed)}
			s.merged = !s.context && strings.Count(typed, "[hm:") > 1
			out = append(out, s)
		}
		// Claude Code sends a hook's context as a system message: the
		// first time alone (the model got it there), later again as a
		// rendering of the history. It counts where nothing before did.
		for _, p := range r.SystemTexts {
			if len(out) == 0 && strings.Contains(p, trailer) {
				out = append(out, sighting{seq: r.Seq, part: p, context: true})
			}
		}
	}
	return out
}

// promptSightings finds the main turns whose new content holds text (a
// person's prompt); merged: that part also holds an hm message.
func promptSightings(reqs []model.Request, text string) []sighting {
	var out []sighting
	for _, r := range reqs {
		if !r.Main {
			continue
		}
		for _, p := range r.Texts {
			if strings.Contains(p, text) {
				out = append(out, sighting{seq: r.Seq, part: p, merged: strings.Contains(p, "[hm:")})
			}
		}
	}
	return out
}

// judge says what is wrong with how a message body (as stored, header
// included) with id reached the model: not exactly once, merged, or
// altered. A body typed as a pointer line (over agent.MaxInlineBody) must
// name its file, which must hold the body.
func judge(ss []sighting, id, body string, readFile func(string) (string, error)) error {
	if len(ss) != 1 {
		return fmt.Errorf("reached the model %d times, want exactly once (%s)", len(ss), seqs(ss))
	}
	s := ss[0]
	if s.merged {
		return fmt.Errorf("merged with another message into one prompt (request %d): %q", s.seq, clip(s.part))
	}
	want := strings.Trim(agent.Neutralize(body), " \t\n")
	trailer := agent.Trailer(id)
	if len(want) <= agent.MaxInlineBody {
		if !strings.Contains(s.part, want+" "+trailer) {
			return fmt.Errorf("altered: request %d holds %q, want the body %q followed by %s", s.seq, clip(s.part), clip(want), trailer)
		}
		return nil
	}
	m := pointerRe.FindStringSubmatch(s.part)
	if m == nil {
		return fmt.Errorf("a %d-byte body: request %d holds no pointer line: %q", len(want), s.seq, clip(s.part))
	}
	got, err := readFile(m[1])
	if err != nil {
		return fmt.Errorf("the pointer file of request %d: %w", s.seq, err)
	}
	if strings.Trim(got, " \t\n") != want {
		return fmt.Errorf("the pointer file %s holds %q, want %q", m[1], clip(got), clip(want))
	}
	return nil
}

// pointerRe finds the file of a pointer line (agent's compose).
var pointerRe = regexp.MustCompile(`\[full message \(\d+ bytes\) in (\S+)\]`)

func seqs(ss []sighting) string {
	var b []string
	for _, s := range ss {
		kind := "typed"
		if s.context {
			kind = "hook context"
		}
		b = append(b, fmt.Sprintf("request %d, %s", s.seq, kind))
	}
	if len(b) == 0 {
		return "no request holds it"
	}
	return strings.Join(b, "; ")
}

// describe lists the requests whose Seq is in which, with the main
// request before each (what its new texts were judged against): how many
// texts each carried, how many the judge took as new, and the start of
// the new ones. A copy counted twice shows here whether the CLI sent its
// history again in another form (a resumed session) or a turn twice.
func describe(reqs []model.Request, which map[int]bool) string {
	var b strings.Builder
	prev := -1
	for i, r := range reqs {
		if !r.Main {
			continue
		}
		if which[r.Seq] {
			if prev >= 0 && !which[reqs[prev].Seq] {
				fmt.Fprintf(&b, "  before it: request %d, %d new texts: %q\n", reqs[prev].Seq, len(reqs[prev].Texts), clip(reqs[prev].New()))
			}
			fmt.Fprintf(&b, "  request %d (%s, %d bytes), %d new texts: %q\n", r.Seq, r.At.Format("15:04:05.000"), len(r.Body), len(r.Texts), clip(r.New()))
		}
		prev = i
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + " … " + s[len(s)-200:]
	}
	return s
}

// stageTrue says whether a message's final stage in the ledger is true of
// what the model got: a stage that claims the text reached the program
// (submitted, delivered.context, delivered.verified) for a message the
// model never got is false, and so is stuck for one it got.
func stageTrue(stage status.Stage, got bool) error {
	switch {
	case !got && stage.Rank() >= status.Submitted.Rank():
		return fmt.Errorf("the ledger says %s, but the model never got it", stage)
	case got && stage == status.Stuck:
		return fmt.Errorf("the ledger says stuck, but the model got it")
	}
	return nil
}
