package initwire

import (
	"fmt"
	"strings"
	"testing"
)

var claudeSpecs = Hooks("claude")

// edit runs the MCP and hook edits on in, as hm init does for Gemini.
func editJSON(in string) (string, error) {
	out, _, err := jsonEdit(
		func(d *jsonDoc) (string, error) {
			c, err := d.setMCPServer("mcpServers")
			if c {
				return "mcp", err
			}
			return "", err
		},
		func(d *jsonDoc) (string, error) {
			added, removed, err := d.setHooks(claudeSpecs[:1])
			if len(added) > 0 || removed > 0 {
				return "hooks", err
			}
			return "", err
		},
	)("f.json", []byte(in))
	return string(out), err
}

func TestJSONEdit(t *testing.T) {
	const hm = `"hm": {"command": "hm", "args": ["mcp"]}`
	const hook = `"SessionStart": [{"hooks": [{"type": "command", "command": "hm hook claude SessionStart"}]}]`
	tests := []struct{ name, in, want string }{
		{"empty file", "", "{\n  \"mcpServers\": {\n    \"hm\": {\n      \"command\": \"hm\",\n      \"args\": [\"mcp\"]\n    }\n  },\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"hm hook claude SessionStart\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"},
		{"one line stays one line", `{"a":1}`, `{"a":1,"mcpServers":{` + hm + `},"hooks":{` + hook + `}}`},
		{"one line with a comment", `{/* c */ "a": 1}`, `{/* c */ "a": 1, "mcpServers": {` + hm + `}, "hooks": {` + hook + `}}`},
		{"wired one line is left alone", `{"mcpServers":{"hm":{"command":"hm","args":["mcp"]}},"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"hm hook claude SessionStart"}]}]}}`,
			`{"mcpServers":{"hm":{"command":"hm","args":["mcp"]}},"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"hm hook claude SessionStart"}]}]}}`},
		{"hm by path with more args is wired", `{"mcpServers":{"hm":{"command":"/opt/hm","args":["mcp","--role","x"]}},"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"/opt/hm hook claude SessionStart --v"}]}]}}`,
			`{"mcpServers":{"hm":{"command":"/opt/hm","args":["mcp","--role","x"]}},"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"/opt/hm hook claude SessionStart --v"}]}]}}`},
		{"another program named like hm is not", `{"mcpServers":{"hm":{"command":"hmx","args":["mcp"]}},"hooks":{}}`,
			`{"mcpServers":{"hm":{"command":"hm","args":["mcp"]}},"hooks":{` + hook + `}}`},
		{"comments and trailing commas",
			"{\n  // c1\n  \"mcpServers\": {\n    \"x\": {}, // c2\n  },\n  /* c3 */\n  \"hooks\": {\"SessionStart\": [], /* c4 */},\n}\n",
			"{\n  // c1\n  \"mcpServers\": {\n    \"x\": {}, // c2\n    \"hm\": {\n      \"command\": \"hm\",\n      \"args\": [\"mcp\"]\n    },\n  },\n  /* c3 */\n  \"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"hm hook claude SessionStart\"}]}], /* c4 */},\n}\n"},
		{"comment before closing brace stays last",
			"{\n  \"mcpServers\": {\n    \"x\": {} // about x\n  },\n  \"hooks\": {}\n}",
			"{\n  \"mcpServers\": {\n    \"x\": {}, // about x\n    \"hm\": {\n      \"command\": \"hm\",\n      \"args\": [\"mcp\"]\n    }\n  },\n  \"hooks\": {\n    " + hookMultiline + "\n  }\n}"},
		{"tabs", "{\n\t\"mcpServers\": {}\n}", "{\n\t\"mcpServers\": {\n\t\t\"hm\": {\n\t\t\t\"command\": \"hm\",\n\t\t\t\"args\": [\"mcp\"]\n\t\t}\n\t},\n\t\"hooks\": {\n\t\t\"SessionStart\": [\n\t\t\t{\n\t\t\t\t\"hooks\": [\n\t\t\t\t\t{\n\t\t\t\t\t\t\"type\": \"command\",\n\t\t\t\t\t\t\"command\": \"hm hook claude SessionStart\"\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t}\n}"},
		// A UTF-8 byte order mark is accepted and kept (issue #33).
		{"byte order mark kept", "\ufeff{\"a\":1}", "\ufeff" + `{"a":1,"mcpServers":{` + hm + `},"hooks":{` + hook + `}}`},
		{"byte order mark alone", "\ufeff", "\ufeff{\n  \"mcpServers\": {\n    \"hm\": {\n      \"command\": \"hm\",\n      \"args\": [\"mcp\"]\n    }\n  },\n  \"hooks\": {\n    " + hookMultiline + "\n  }\n}\n"},
		{"receipt hooks go, others stay", `{"mcpServers":{"hm":{"command":"hm","args":["mcp"]}},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"hm receipt"},{"type":"command","command":"say"}]}],"Notification":[{"hooks":[{"type":"command","command":"hm receipt"}]}],"SessionStart":[{"hooks":[{"type":"command","command":"hm receipt"}]}]}}`,
			`{"mcpServers":{"hm":{"command":"hm","args":["mcp"]}},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say"}]}],"SessionStart":[{"hooks": [{"type": "command", "command": "hm hook claude SessionStart"}]}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editJSON(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("got\n%s\n%s", got, unifiedDiff("want", "got", []byte(tc.want), []byte(got)))
			}
			d, err := parseJSON("out", []byte(got))
			if err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
			doc := decode(d.root).(map[string]any)
			if !mcpUpToDate(doc["mcpServers"].(map[string]any)["hm"]) {
				t.Errorf("mcpServers.hm does not run hm mcp: %s", got)
			}
			if !hasHook(doc["hooks"].(map[string]any)["SessionStart"], func(c string) bool { return isHMCommand(c, "hook", "claude", "SessionStart") }) {
				t.Errorf("no SessionStart hook: %s", got)
			}
			if again, err := editJSON(got); err != nil || again != got {
				t.Errorf("second run: %v\n%s", err, unifiedDiff("first", "second", []byte(got), []byte(again)))
			}
		})
	}
}

const hookMultiline = "\"SessionStart\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"hm hook claude SessionStart\"\n          }\n        ]\n      }\n    ]"

// A CRLF file gets CRLF lines.
func TestJSONCRLF(t *testing.T) {
	got, err := editJSON("{\r\n  \"hooks\": {}\r\n}\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(got, "\n") != strings.Count(got, "\r\n") || strings.Count(got, "\n") < 10 {
		t.Errorf("not all CRLF:\n%q", got)
	}
}

func TestJSONRefused(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"syntax", "{\n  \"a\": 1,\n  \"b\" 2\n}", "f.json:3:7: invalid character '2' after object name"},
		{"unterminated", "{\"a\": [1, 2", "f.json:1:12: parsing array after value: unexpected EOF"},
		{"not an object", "[1, 2]", "f.json:1: the top-level value is not an object"},
		{"mcpServers not an object", "{\n\"mcpServers\": []}", "f.json:2: mcpServers is not an object"},
		{"hooks not an object", "{\"mcpServers\": {}, \"hooks\": \"x\"}", "f.json:1: hooks is not an object"},
		{"event not an array", "{\"hooks\": {\n\n\"SessionStart\": {}}}", "f.json:3: hooks.SessionStart is not an array"},
		{"hm not an object", "{\"mcpServers\": {\"hm\": \"hm mcp\"}}", "f.json:1: mcpServers.hm is not an object"},
		// A JSON reader takes the last of two equal keys: an edit of the
		// first would never be seen.
		{"mcpServers twice", "{\"mcpServers\": {\"a\": {}},\n\"mcpServers\": {}}", `f.json:2: "mcpServers" appears twice`},
		{"hooks twice", "{\"hooks\": {}, \"hooks\": {}}", `f.json:1: "hooks" appears twice`},
		{"event twice", "{\"hooks\": {\"Stop\": [],\n\n \"Stop\": []}}", `f.json:3: "hooks.Stop" appears twice`},
		{"escaped twin", `{"hooks": {}, "hoo\u006bs": {}}`, `f.json:1: "hooks" appears twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := editJSON(tc.in)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q…", err, tc.want)
			}
		})
	}
}

// userHooks lists, per event, the commands of handlers that do not run hm.
func userHooks(doc map[string]any) map[string][]string {
	out := map[string][]string{}
	hooks, _ := doc["hooks"].(map[string]any)
	for ev, groups := range hooks {
		gs, _ := groups.([]any)
		for _, g := range gs {
			gm, _ := g.(map[string]any)
			hs, _ := gm["hooks"].([]any)
			for _, h := range hs {
				hm, _ := h.(map[string]any)
				if cmd, ok := hm["command"].(string); ok && !isHMCommand(cmd) {
					out[ev] = append(out[ev], cmd)
				}
			}
		}
	}
	return out
}

// FuzzJSONEdit: whatever the settings file, hm init either refuses it or
// gives a file that parses, runs hm mcp and hm's hooks, keeps every other
// setting, server and hook, and is left alone the next time.
func FuzzJSONEdit(f *testing.F) {
	for _, s := range []string{
		"", "{}", `{"a":1}`, "{\n  // c\n  \"mcpServers\": {\"x\": {},},\n}",
		`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"hm receipt"}]}],"Stop":[{"hooks":[{"command":"x"}]}]}}`,
		`{"mcpServers":{"hm":{"command":"x","args":["y"],"env":{}}}}`,
		"{\"hooks\": {\"SessionStart\": [ /* c */ ], \"disabled\": [\"x\"]}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := editJSON(string(data))
		if err != nil {
			return
		}
		d, err := parseJSON("out", []byte(got))
		if err != nil {
			t.Fatalf("%q gave %q, which does not parse: %v", data, got, err)
		}
		doc, _ := decode(d.root).(map[string]any)
		servers, _ := doc["mcpServers"].(map[string]any)
		if !mcpUpToDate(servers["hm"]) || !hasHook(doc["hooks"].(map[string]any)["SessionStart"], func(c string) bool { return isHMCommand(c, "hook", "claude", "SessionStart") }) {
			t.Fatalf("%q gave %q: not wired", data, got)
		}
		if d0, err := parseJSON("in", data); err == nil {
			old, _ := decode(d0.root).(map[string]any)
			if old == nil { // an empty file
				old = map[string]any{}
			}
			for k, v := range old {
				if k != "mcpServers" && k != "hooks" && fmt.Sprint(v) != fmt.Sprint(doc[k]) {
					t.Fatalf("%q gave %q: %s changed", data, got, k)
				}
			}
			oldServers, _ := old["mcpServers"].(map[string]any)
			for k, v := range oldServers {
				if k != "hm" && fmt.Sprint(v) != fmt.Sprint(servers[k]) {
					t.Fatalf("%q gave %q: server %s changed", data, got, k)
				}
			}
			if a, b := fmt.Sprint(userHooks(old)), fmt.Sprint(userHooks(doc)); a != b {
				t.Fatalf("%q gave %q: hooks %s became %s", data, got, a, b)
			}
		}
		if again, err := editJSON(got); err != nil || again != got {
			t.Fatalf("second run on %q: %v\n%q", got, err, again)
		}
	})
}
