package initwire

import (
	"bytes"
	"slices"
	"strings"
)

// The markers around the instructions block hm manages in CLAUDE.md,
// AGENTS.md and GEMINI.md. A marker counts only as a whole line (surrounding
// spaces allowed).
const (
	BeginMarker = "<!-- hm:begin -->"
	EndMarker   = "<!-- hm:end -->"
)

// markers are the lines around a block hm manages in a file: Markdown's
// comments, or # comments in a git ignore file.
type markers struct{ begin, end string }

var (
	markdownMarkers = markers{BeginMarker, EndMarker}
	hashMarkers     = markers{"# hm:begin", "# hm:end"}
)

// span is a managed block: the bytes [start, end) of a file, from the start
// of its begin line to the end of its end line (terminator included).
type span struct{ start, end int }

// findBlocks returns the complete blocks of data in order. A block is a
// begin line and the first end line after it with no begin line between
// them; any other marker line (a begin never closed, or superseded by a later
// begin; an end with no open begin) is stray and belongs to the user's text.
func (m markers) findBlocks(data []byte) []span {
	var blocks []span
	open := -1
	for off := 0; off < len(data); {
		next := lineEnd(data, off)
		switch strings.TrimSpace(string(data[off:next])) {
		case m.begin:
			open = off
		case m.end:
			if open >= 0 {
				blocks = append(blocks, span{open, next})
				open = -1
			}
		}
		off = next
	}
	return blocks
}

// lineEnding is "\r\n" when data's first line ends that way, else "\n".
func lineEnding(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// lineEnd is the offset just after the newline that ends the line at off,
// or len(data) when that line has none.
func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

// separator is what goes between data and text appended after it so that a
// blank line parts them: nothing when data is empty or already ends in one.
func separator(data []byte, nl string) string {
	switch {
	case len(data) == 0, bytes.HasSuffix(data, []byte(nl+nl)):
		return ""
	case bytes.HasSuffix(data, []byte("\n")):
		return nl
	}
	return nl + nl
}

// blockEnding is the line ending a block gets: that of the existing
// block's begin line, else that of the file's first line.
func blockEnding(data []byte, blocks []span) string {
	if len(blocks) > 0 {
		return lineEnding(data[blocks[0].start:])
	}
	return lineEnding(data)
}

// renderBlock is body between the markers, every line ending in nl.
func (m markers) renderBlock(body, nl string) []byte {
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	var b strings.Builder
	b.WriteString(m.begin + nl)
	for _, l := range lines {
		b.WriteString(l + nl)
	}
	b.WriteString(m.end + nl)
	return []byte(b.String())
}

// setBlock returns data with its managed block holding body. With no
// block, one is appended after a blank line. Otherwise the first complete
// block is refreshed in place and later complete blocks are removed, unless
// removing them would pair stray markers into a new block (a stray begin
// before a removed block and a stray end after it); then every block is
// refreshed in place instead. Either way the bytes outside complete blocks
// are kept as they are, in order, stray markers included, and a second run
// changes nothing.
func (m markers) setBlock(data []byte, body string) []byte {
	blocks := m.findBlocks(data)
	nl := blockEnding(data, blocks)
	block := m.renderBlock(body, nl)
	if len(blocks) == 0 {
		return slices.Concat(data, []byte(separator(data, nl)), block)
	}
	one := replaceBlocks(data, blocks, block, true)
	if n := len(m.findBlocks(one)); n == 1 && string(m.outside(one)) == string(m.outside(data)) {
		return one
	}
	return replaceBlocks(data, blocks, block, false)
}

// replaceBlocks puts block in place of the first of blocks and, unless
// onlyFirst, of each of the others; with onlyFirst the others are dropped.
func replaceBlocks(data []byte, blocks []span, block []byte, onlyFirst bool) []byte {
	var out []byte
	prev := 0
	for i, b := range blocks {
		out = append(out, data[prev:b.start]...)
		if i == 0 || !onlyFirst {
			out = append(out, block...)
		}
		prev = b.end
	}
	return append(out, data[prev:]...)
}

// outside is data without its complete blocks: the user's text.
func (m markers) outside(data []byte) []byte {
	return replaceBlocks(data, m.findBlocks(data), nil, false)
}
