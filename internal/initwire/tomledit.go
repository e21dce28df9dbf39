package initwire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// go-toml decodes and encodes documents but does not keep comments or
// layout through a round trip, so the Codex config is edited as text: only
// the lines of the [mcp_servers.hm] table's command and args (or a new table
// appended at the end) change, their places found with go-toml's parser,
// and the result is decoded again and compared with the original, so that
// nothing but mcp_servers.hm.command and .args can differ.

// decodeTOML decodes data; an error names the file, line and column.
func decodeTOML(name string, data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", name, row, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc, nil
}

// edit replaces data[off:off+n] with text.
type edit struct {
	off, n int
	text   string
}

func applyEdits(data []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].off > edits[j].off })
	out := append([]byte(nil), data...)
	for _, e := range edits {
		out = slices.Concat(out[:e.off], []byte(e.text), out[e.off+e.n:])
	}
	return out
}

// hmTable is where the Codex config defines mcp_servers.hm.
type hmTable struct {
	headerEnd int             // just after the [mcp_servers.hm] line; -1 without one
	keys      map[string]edit // command/args key-values in that table: their ranges
	elsewhere int             // offset of a dotted or inline definition; -1 if none
	inline    int             // offset of mcp_servers = {…}; -1 if none
}

// findHMTable scans data's expressions, tracking the current table.
func findHMTable(data []byte) hmTable {
	t := hmTable{headerEnd: -1, keys: map[string]edit{}, elsewhere: -1, inline: -1}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	inHM := false
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(n.Key())
			inHM = n.Kind == unstable.Table && slices.Equal(table, []string{"mcp_servers", "hm"})
			if inHM {
				t.headerEnd = lineEnd(data, int(n.Child().Raw.Offset))
			}
		case unstable.KeyValue:
			key := keyParts(n.Key())
			full := slices.Concat(table, key)
			switch {
			case inHM && len(key) == 1 && (key[0] == "command" || key[0] == "args"):
				t.keys[key[0]] = edit{off: int(n.Raw.Offset), n: int(n.Raw.Length)}
			case !underHM(table) && underHM(full) && t.elsewhere < 0:
				t.elsewhere = int(n.Raw.Offset)
			case slices.Equal(full, []string{"mcp_servers"}):
				t.inline = int(n.Raw.Offset)
			}
		}
	}
	return t
}

// underHM reports whether key is mcp_servers.hm or below it.
func underHM(key []string) bool {
	return len(key) >= 2 && key[0] == "mcp_servers" && key[1] == "hm"
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// setCodexMCP makes [mcp_servers.hm] in a Codex config.toml run `hm mcp`.
// An entry that already runs hm's MCP server is left alone; otherwise only
// its command and args lines change (other keys, comments and tables stay
// byte for byte), or the table is appended when there is none.
func setCodexMCP(name string, data []byte) ([]byte, bool, error) {
	old, err := decodeTOML(name, data)
	if err != nil {
		return nil, false, err
	}
	servers, ok := old["mcp_servers"].(map[string]any)
	if _, present := old["mcp_servers"]; present && !ok {
		return nil, false, fmt.Errorf("%s: mcp_servers is not a table", name)
	}
	if mcpUpToDate(servers["hm"]) {
		return data, false, nil
	}
	nl := lineEnding(data)
	lines := map[string]string{"command": `command = "hm"`, "args": `args = ["mcp"]`}
	t := findHMTable(data)
	var edits []edit
	switch {
	case t.headerEnd >= 0:
		// Missing keys go after the header, or after command's line.
		at, missing := t.headerEnd, ""
		for _, k := range []string{"command", "args"} {
			e, ok := t.keys[k]
			if !ok {
				missing += lines[k] + nl
				continue
			}
			edits = append(edits, edit{e.off, e.n, lines[k]})
			if k == "command" {
				at = lineEnd(data, e.off+e.n)
			}
		}
		if missing != "" {
			if at == len(data) && !bytes.HasSuffix(data, []byte("\n")) {
				missing = nl + missing
			}
			edits = append(edits, edit{off: at, text: missing})
		}
	case t.elsewhere >= 0 || t.inline >= 0:
		off := max(t.elsewhere, t.inline)
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return nil, false, fmt.Errorf("%s:%d: mcp_servers or mcp_servers.hm is defined here with dotted keys or an inline table; hm init edits only a [mcp_servers.hm] table: set command = \"hm\" and args = [\"mcp\"] for hm there by hand", name, line)
	default:
		edits = append(edits, edit{off: len(data), text: separator(data, nl) + "[mcp_servers.hm]" + nl + lines["command"] + nl + lines["args"] + nl})
	}
	out := applyEdits(data, edits)
	if err := verifyCodexMCP(old, out); err != nil {
		return nil, false, fmt.Errorf("%s: adding [mcp_servers.hm] would not give a valid config (%v): add it by hand", name, err)
	}
	return out, true, nil
}

// verifyCodexMCP decodes the edited config and checks that it runs hm mcp
// and differs from old in nothing but mcp_servers.hm.command and .args.
func verifyCodexMCP(old map[string]any, out []byte) error {
	doc, err := decodeTOML("edited", out)
	if err != nil {
		return err
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	if !mcpUpToDate(servers["hm"]) {
		return errors.New("mcp_servers.hm does not run hm mcp")
	}
	if a, b := withoutHM(old), withoutHM(doc); a != b {
		return errors.New("other settings would change")
	}
	return nil
}

// withoutHM prints doc without mcp_servers.hm.command and .args (and
// without the tables that leaves empty), for comparison.
func withoutHM(doc map[string]any) string {
	c := map[string]any{}
	for k, v := range doc {
		c[k] = v
	}
	if servers, ok := c["mcp_servers"].(map[string]any); ok {
		s := map[string]any{}
		for k, v := range servers {
			s[k] = v
		}
		if hm, ok := s["hm"].(map[string]any); ok {
			h := map[string]any{}
			for k, v := range hm {
				if k != "command" && k != "args" {
					h[k] = v
				}
			}
			s["hm"] = h
			if len(h) == 0 {
				delete(s, "hm")
			}
		}
		c["mcp_servers"] = s
		if len(s) == 0 {
			delete(c, "mcp_servers")
		}
	}
	return fmt.Sprintf("%#v", c)
}
