package report

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"hm/journal"
)

// doc accumulates a markdown document. Blocks (paragraphs, headings,
// lists, tables) are separated by exactly one blank line.
type doc struct {
	b      bytes.Buffer
	inList bool // the last block written is a bullet list
}

// block starts a new block: one blank line after whatever came before.
func (d *doc) block() {
	d.inList = false
	if d.b.Len() > 0 && !bytes.HasSuffix(d.b.Bytes(), []byte("\n\n")) {
		d.b.WriteString("\n")
	}
}

// title writes the "# " title.
func (d *doc) title(s string) {
	d.block()
	d.b.WriteString("# " + Cell(s) + "\n")
}

// section writes a "## " heading.
func (d *doc) section(s string) {
	d.block()
	d.b.WriteString("## " + s + "\n")
}

// para writes one paragraph.
func (d *doc) para(s string) {
	d.block()
	d.b.WriteString(s + "\n")
}

// bullet writes one "- " list item; consecutive items form one list.
func (d *doc) bullet(s string) {
	if !d.inList {
		d.block()
	}
	d.inList = true
	d.b.WriteString("- " + s + "\n")
}

// table writes a markdown table; every cell goes through Cell. Columns
// whose index is in right are right-aligned.
func (d *doc) table(head []string, rows [][]string, right ...int) {
	d.block()
	d.row(head)
	d.b.WriteString("|")
	for i := range head {
		if slices.Contains(right, i) {
			d.b.WriteString(" ---: |")
		} else {
			d.b.WriteString(" --- |")
		}
	}
	d.b.WriteString("\n")
	for _, r := range rows {
		d.row(r)
	}
}

func (d *doc) row(cells []string) {
	d.b.WriteString("|")
	for _, c := range cells {
		d.b.WriteString(" ")
		d.b.WriteString(Cell(c))
		d.b.WriteString(" |")
	}
	d.b.WriteString("\n")
}

// none writes the placeholder for an empty section.
func (d *doc) none(s string) { d.para("_" + s + "_") }

// list writes the body of a section that lists rows: the placeholder none
// when there are no rows; else intro (unless ""), the table and, when more
// rows were cut at limit, a note that only the newest limit of what are
// shown.
func (d *doc) list(none, intro string, head []string, rows [][]string, more bool, limit int, what string, right ...int) {
	if len(rows) == 0 {
		d.none(none)
		return
	}
	if intro != "" {
		d.para(intro)
	}
	d.table(head, rows, right...)
	if more {
		d.para(moreNote(limit, what))
	}
}

// rowsOf renders each item as a table row.
func rowsOf[T any](items []T, row func(T) []string) [][]string {
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	return rows
}

// bytes returns the document, ending in exactly one newline.
func (d *doc) bytes() []byte {
	out := bytes.TrimRight(d.b.Bytes(), "\n")
	return append(out, '\n')
}

// fmtTime renders unix milliseconds as UTC "2006-01-02 15:04:05"; "—" for
// unknown (0 or negative) times.
func fmtTime(ms int64) string {
	if ms <= 0 {
		return "—"
	}
	return time.UnixMilli(ms).UTC().Format(time.DateTime)
}

// msgTime is when a message was sent, or brokered when the send time is
// unknown.
func msgTime(m journal.Message) int64 {
	if m.SentAtMs > 0 {
		return m.SentAtMs
	}
	return m.BrokeredAtMs
}

// fmtAge renders the time between ms and now compactly ("45s", "12m",
// "3h5m", "2d4h"); "—" when unknown.
func fmtAge(now time.Time, ms int64) string {
	if ms <= 0 {
		return "—"
	}
	d := now.Sub(time.UnixMilli(ms))
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m"
	case s < 86400:
		h, m := s/3600, s%3600/60
		if m == 0 {
			return strconv.FormatInt(h, 10) + "h"
		}
		return strconv.FormatInt(h, 10) + "h" + strconv.FormatInt(m, 10) + "m"
	default:
		dd, h := s/86400, s%86400/3600
		if h == 0 {
			return strconv.FormatInt(dd, 10) + "d"
		}
		return strconv.FormatInt(dd, 10) + "d" + strconv.FormatInt(h, 10) + "h"
	}
}

// dash returns s, or "—" when s is empty.
func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// itoa formats an int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// capped formats a count from a capped count query.
func capped(n int64) string {
	if n >= countCap {
		return itoa(countCap) + "+"
	}
	return itoa(n)
}

// ref renders a message's "HEADER #N", or "—".
func ref(m journal.Message) string { return dash(m.Ref()) }

// statusCell renders how far a message got, in plain words
// (journal.Message.Delivery).
func statusCell(m journal.Message) string { return m.Delivery() }

// moreNote is the note under a table that was cut at limit rows.
func moreNote(limit int, what string) string {
	return "_Only the newest " + strconv.Itoa(limit) + " " + what + " are shown._"
}

// roleLine is one row of a per-role table.
type roleLine struct {
	role, header, pane, program string
	stat                        senderStat
}

// roleLines merges the configured team with the senders found in a
// session: configured roles first, in the given order, then other senders
// by name.
func roleLines(team []RoleInfo, senders map[string]senderStat) []roleLine {
	var out []roleLine
	seen := map[string]bool{}
	for _, r := range team {
		k := strings.ToLower(r.Role)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, roleLine{role: r.Role, header: r.Header, pane: r.PaneID, program: r.Program, stat: senders[k]})
	}
	var rest []string
	for k := range senders {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, roleLine{role: dash(k), stat: senders[k]})
	}
	return out
}

// lastSeq renders a sender's highest sequence number, or "—".
func lastSeq(st senderStat) string {
	if st.maxSeq <= 0 {
		return "—"
	}
	return "#" + itoa(st.maxSeq)
}
