// Package launchwire passes hm's wiring (the `hm mcp` server and the `hm
// hook` hooks) to a CLI that hm launches itself, as launch flags, so that
// nothing in the user's files is needed (docs/protocol.md §13, "Panes hm
// launches"). It rewrites a pane's command line only when the line is a
// recognisable direct invocation of the CLI; anything else is left as it is.
package launchwire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"hm/internal/ground/atomicfile"
	"hm/internal/initwire"
	"hm/roles"
)

// MCPCommand and MCPArgs are how a CLI starts hm's MCP server: the same as
// `hm init` writes, so the two wirings name one server. A pane's PATH
// starts with the hub binary's directory, so "hm" is the hub's own binary.
const MCPCommand = "hm"

// MCPArgs are the MCP server's arguments.
var MCPArgs = []string{"mcp"}

// Files are the files a rewritten Claude command names.
type Files struct {
	// ClaudeMCP is the --mcp-config file; ClaudeSettings the --settings
	// file (hooks). Empty: that flag is not added.
	ClaudeMCP      string
	ClaudeSettings string
}

// WriteFiles writes the Claude launch files into dir (created 0700), each
// 0600, and returns their paths.
func WriteFiles(dir string) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, err
	}
	mcpDoc := map[string]any{"mcpServers": map[string]any{"hm": map[string]any{"command": MCPCommand, "args": MCPArgs}}}
	// The hooks hm init wires, in the same shape.
	hooks := map[string][]any{}
	for _, h := range initwire.Hooks("claude") {
		handler := map[string]any{"type": "command", "command": h.Command}
		if h.AsyncRewake {
			handler["asyncRewake"], handler["timeout"] = true, h.Timeout
		}
		group := map[string]any{"hooks": []any{handler}}
		if h.Matcher != "" {
			group["matcher"] = h.Matcher
		}
		hooks[h.Event] = append(hooks[h.Event], group)
	}
	f := Files{ClaudeMCP: filepath.Join(dir, "claude-mcp.json"), ClaudeSettings: filepath.Join(dir, "claude-settings.json")}
	for path, doc := range map[string]any{f.ClaudeMCP: mcpDoc, f.ClaudeSettings: map[string]any{"hooks": hooks}} {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return Files{}, err
		}
		if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// Command returns the command line with hm's launch flags added, and what
// was added (for the log), or the line unchanged and nil when it is not a
// direct invocation of Claude Code or Codex, or already carries the
// wiring. Recognised forms: one simple command (no ; & | ( ) < > ` or
// newline outside quotes), with optional leading VAR=value assignments,
// exec, and env with assignments only, whose program is claude or codex (by
// base name, any directory); or such a command as the string of a shell's
// -c ("sh -c '…'", "bash -lc \"…\""), one level deep. The flags go right
// after the program's name, so they precede any prompt or "--". What the
// user already passed is not repeated: Claude's --mcp-config and
// --settings, Codex's -c/--config mcp_servers.hm….
func Command(line string, f Files) (string, []string) {
	return rewrite(line, f, 0)
}

func rewrite(line string, f Files, depth int) (string, []string) {
	words, ok := lexSimple(line)
	if !ok || len(words) == 0 {
		return line, nil
	}
	i := 0
	skipAssign := func() {
		for i < len(words) && words[i].plain && roles.IsAssignment(words[i].text) {
			i++
		}
	}
	skipAssign()
	if i < len(words) && words[i].plain && words[i].text == "exec" {
		i++
	}
	if i < len(words) && words[i].plain && words[i].text == "env" {
		i++
		skipAssign()
	}
	if i >= len(words) || !words[i].plain {
		return line, nil
	}
	prog := strings.ToLower(filepath.Base(words[i].text))
	args := texts(words[i+1:])
	var add []string
	switch {
	case shells[prog] && depth == 0:
		// sh -c STRING: the flag cluster before STRING must hold c.
		j := i + 1
		for j < len(words) && words[j].plain && strings.HasPrefix(words[j].text, "-") && !strings.HasPrefix(words[j].text, "--") {
			if strings.Contains(words[j].text, "c") {
				j++
				if j >= len(words) || !words[j].plain {
					return line, nil
				}
				inner, added := rewrite(words[j].text, f, depth+1)
				if added == nil {
					return line, nil
				}
				return line[:words[j].start] + shQuote(inner) + line[words[j].end:], added
			}
			j++
		}
		return line, nil
	case prog == "claude":
		if f.ClaudeMCP != "" && !hasOption(args, "--mcp-config") {
			add = append(add, "--mcp-config="+f.ClaudeMCP)
		}
		if f.ClaudeSettings != "" && !hasOption(args, "--settings") {
			add = append(add, "--settings="+f.ClaudeSettings)
		}
	case prog == "codex":
		if !codexHasHM(args) {
			add = append(add,
				"-c", "mcp_servers.hm.command="+tomlString(MCPCommand),
				"-c", "mcp_servers.hm.args="+tomlArray(MCPArgs))
		}
	}
	if len(add) == 0 {
		return line, nil
	}
	quoted := make([]string, len(add))
	for k, a := range add {
		quoted[k] = shQuote(a)
	}
	at := words[i].end
	return line[:at] + " " + strings.Join(quoted, " ") + line[at:], add
}

// hasOption reports whether args hold the long option name, as "name",
// or "name=value", before a "--".
func hasOption(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// codexHasHM reports whether a Codex command already sets mcp_servers.hm
// (-c K=V, -cK=V, --config K=V, --config=K=V).
func codexHasHM(args []string) bool {
	for k, a := range args {
		if a == "--" {
			return false
		}
		var v string
		switch {
		case (a == "-c" || a == "--config") && k+1 < len(args):
			v = args[k+1]
		case strings.HasPrefix(a, "--config="):
			v = strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			v = a[2:]
		default:
			continue
		}
		v = strings.TrimSpace(v)
		if v == "mcp_servers" || strings.HasPrefix(v, "mcp_servers.hm.") || strings.HasPrefix(v, "mcp_servers.hm=") || strings.HasPrefix(v, "mcp_servers=") {
			return true
		}
	}
	return false
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string of printable text is a TOML basic string
	return string(b)
}

func tomlArray(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// shQuote quotes s for /bin/sh: as it is when it holds only safe
// characters, else in single quotes.
func shQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true, "yash": true}

// word is one shell word: its text with quotes removed, its span in the
// line, and whether it is plain (no expansion: no $ or ` outside single
// quotes, no glob characters outside quotes).
type word struct {
	text       string
	start, end int
	plain      bool
}

func texts(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

// lexSimple splits a line that is one simple command into words; ok is
// false for anything else (operators, redirections, command substitution,
// comments, line continuations, unterminated quotes).
func lexSimple(s string) (words []word, ok bool) {
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return words, true
		}
		if s[i] == '#' {
			return nil, false
		}
		w := word{start: i, plain: true}
		var b strings.Builder
	word:
		for i < len(s) {
			c := s[i]
			switch c {
			case ' ', '\t':
				break word
			case ';', '&', '|', '(', ')', '<', '>', '`', '\n', '\r':
				return nil, false
			case '\\':
				if i+1 >= len(s) || s[i+1] == '\n' {
					return nil, false
				}
				b.WriteByte(s[i+1])
				i += 2
			case '\'':
				end := strings.IndexByte(s[i+1:], '\'')
				if end < 0 {
					return nil, false
				}
				b.WriteString(s[i+1 : i+1+end])
				i += end + 2
			case '"':
				i++
				for {
					if i >= len(s) {
						return nil, false
					}
					c := s[i]
					if c == '"' {
						i++
						break
					}
					if c == '`' {
						return nil, false
					}
					if c == '$' {
						w.plain = false
					}
					if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						if s[i+1] == '\n' {
							return nil, false
						}
						b.WriteByte(s[i+1])
						i += 2
						continue
					}
					b.WriteByte(c)
					i++
				}
			case '$':
				if i+1 < len(s) && s[i+1] == '(' {
					return nil, false
				}
				w.plain = false
				b.WriteByte(c)
				i++
			case '*', '?', '[', '{':
				w.plain = false
				b.WriteByte(c)
				i++
			default:
				b.WriteByte(c)
				i++
			}
		}
		w.text, w.end = b.String(), i
		words = append(words, w)
	}
}
