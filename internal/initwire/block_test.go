package initwire

import (
	"bytes"
	"strings"
	"testing"
)

const (
	b = BeginMarker + "\n"
	e = EndMarker + "\n"
)

func TestSetBlock(t *testing.T) {
	const body = "hello\nworld"
	blk := b + "hello\nworld\n" + e
	tests := []struct{ name, in, want string }{
		{"empty", "", blk},
		{"text", "# Notes\n", "# Notes\n\n" + blk},
		{"no final newline", "# Notes", "# Notes\n\n" + blk},
		{"blank line already", "# Notes\n\n", "# Notes\n\n" + blk},
		{"block in the middle", "top\n" + b + "old\n" + e + "bottom\n", "top\n" + blk + "bottom\n"},
		{"block at the end without newline", "top\n" + b + "old\n" + EndMarker, "top\n" + blk},
		{"indented markers", "top\n  " + BeginMarker + " \nold\n\t" + EndMarker + "\nbottom", "top\n" + blk + "bottom"},
		{"duplicate blocks", "a\n" + b + "1\n" + e + "b\n" + b + "2\n" + e + "c\n", "a\n" + blk + "b\nc\n"},
		{"stray end first", e + "a\n" + b + "x\n" + e, e + "a\n" + blk},
		{"stray begin never closed", "a\n" + b + "user text\n", "a\n" + b + "user text\n\n" + blk},
		{"begin superseded", b + "mine\n" + b + "old\n" + e + "tail\n", b + "mine\n" + blk + "tail\n"},
		{"marker inside a line is text", "see <!-- hm:begin --> here\n", "see <!-- hm:begin --> here\n\n" + blk},
		{"crlf", "# Notes\r\n", "# Notes\r\n\r\n" + strings.ReplaceAll(blk, "\n", "\r\n")},
		{"crlf block", "a\r\n" + BeginMarker + "\r\nold\r\n" + EndMarker + "\r\nz\r\n", "a\r\n" + strings.ReplaceAll(blk, "\n", "\r\n") + "z\r\n"},
		// Removing the second block would pair the stray begin before it
		// with the stray end after it and hide "keep me" in a block: both
		// blocks are refreshed instead.
		{"removal would re-pair strays", b + "1\n" + e + b + "keep me\n" + b + "2\n" + e + "more\n" + e, blk + b + "keep me\n" + blk + "more\n" + e},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(markdownMarkers.setBlock([]byte(tc.in), body))
			if got != tc.want {
				t.Errorf("setBlock(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := string(markdownMarkers.setBlock([]byte(got), body)); again != got {
				t.Errorf("second run changed it:\n%q\n%q", got, again)
			}
		})
	}
}

// userText is data outside its complete blocks, found independently of
// findBlocks: a line-by-line pass that holds back the lines from a begin
// until it sees whether an end closes them.
func userText(data string) string {
	var out, held strings.Builder
	open := false
	for _, l := range splitLines(data) {
		switch strings.TrimSpace(l) {
		case BeginMarker:
			out.WriteString(held.String()) // a begin superseded: its lines were text
			held.Reset()
			held.WriteString(l)
			open = true
			continue
		case EndMarker:
			if open {
				held.Reset() // a complete block
				open = false
				continue
			}
		}
		if open {
			held.WriteString(l)
		} else {
			out.WriteString(l)
		}
	}
	out.WriteString(held.String())
	return out.String()
}

// FuzzSetBlock: for any existing file (stray and duplicated markers, CRLF,
// no final newline, binary), the result holds the block and nothing but
// the block's bytes changed: the text outside complete blocks is the old
// text outside blocks (plus the blank line before an appended block), and
// a second run changes nothing.
func FuzzSetBlock(f *testing.F) {
	for _, s := range []string{
		"", "# Notes\n", "x", b + e, e + b, b + b + e + e,
		"a\n" + b + "1\n" + e + "b\n" + b + "2\n" + e + "c",
		b + "1\n" + e + b + "keep\n" + b + "2\n" + e + "more\n" + e,
		"a\r\n" + BeginMarker + "\r\nx\r\n" + EndMarker + "\r\n",
		"  " + BeginMarker + "  \n\t" + EndMarker, "\x00\xff" + b,
	} {
		f.Add([]byte(s), "body")
	}
	f.Fuzz(func(t *testing.T, data []byte, body string) {
		for r := strings.NewReplacer(BeginMarker, "", EndMarker, ""); r.Replace(body) != body; {
			body = r.Replace(body) // hm's body holds no markers
		}
		out := markdownMarkers.setBlock(data, body)
		block := string(markdownMarkers.renderBlock(body, blockEnding(data, markdownMarkers.findBlocks(data))))

		blocks := markdownMarkers.findBlocks(out)
		if len(blocks) == 0 {
			t.Fatalf("no block in %q", out)
		}
		for _, s := range blocks {
			if got := string(out[s.start:s.end]); got != block {
				t.Fatalf("block %q, want %q", got, block)
			}
		}
		before, after := userText(string(data)), userText(string(out))
		if len(markdownMarkers.findBlocks(data)) == 0 {
			// Appended: the old text, a separator of blank lines, the block.
			if !strings.HasPrefix(after, before) || strings.Trim(after[len(before):], "\r\n") != "" {
				t.Fatalf("user text changed:\nbefore %q\nafter  %q", before, after)
			}
		} else if before != after {
			t.Fatalf("user text changed:\nbefore %q\nafter  %q", before, after)
		}
		if again := markdownMarkers.setBlock(out, body); !bytes.Equal(again, out) {
			t.Fatalf("second run changed %q to %q", out, again)
		}
	})
}
