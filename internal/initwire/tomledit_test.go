package initwire

import (
	"strings"
	"testing"
)

const hmTableTOML = "[mcp_servers.hm]\ncommand = \"hm\"\nargs = [\"mcp\"]\n"

func TestCodexMCP(t *testing.T) {
	tests := []struct {
		name, in, want string
		changed        bool
	}{
		{"empty", "", hmTableTOML, true},
		{"no final newline", "model = \"o3\" # mine", "model = \"o3\" # mine\n\n" + hmTableTOML, true},
		{"other tables and comments",
			"# top\nmodel = \"o3\"\n\n[mcp_servers.docs] # docs\ncommand = \"d\"\n\n[mcp_servers.docs.env]\nK = \"v\"\n",
			"# top\nmodel = \"o3\"\n\n[mcp_servers.docs] # docs\ncommand = \"d\"\n\n[mcp_servers.docs.env]\nK = \"v\"\n\n" + hmTableTOML, true},
		{"wired", hmTableTOML, hmTableTOML, false},
		{"wired by path, more args, other keys",
			"[mcp_servers.hm]\ncommand = '/usr/bin/hm'\nargs = [\"mcp\", \"--role\", \"oracle\"]\nstartup_timeout_sec = 20\n",
			"[mcp_servers.hm]\ncommand = '/usr/bin/hm'\nargs = [\"mcp\", \"--role\", \"oracle\"]\nstartup_timeout_sec = 20\n", false},
		{"only the command and args lines change",
			"[mcp_servers.hm]   # ours\ncommand = \"hm-old\"  # old\nargs = [\n  \"serve\",\n]\nenv = { A = \"1\" }\n\n[x]\ny = 1\n",
			"[mcp_servers.hm]   # ours\ncommand = \"hm\"  # old\nargs = [\"mcp\"]\nenv = { A = \"1\" }\n\n[x]\ny = 1\n", true},
		{"missing args goes after command",
			"[mcp_servers.hm]\nenv = { A = \"1\" }\ncommand = \"x\"\n[y]\n",
			"[mcp_servers.hm]\nenv = { A = \"1\" }\ncommand = \"hm\"\nargs = [\"mcp\"]\n[y]\n", true},
		{"empty table at the end without newline", "[mcp_servers.hm]", "[mcp_servers.hm]\ncommand = \"hm\"\nargs = [\"mcp\"]\n", true},
		{"only a sub-table so far", "[mcp_servers.hm.env]\nA = \"1\"\n", "[mcp_servers.hm.env]\nA = \"1\"\n\n" + hmTableTOML, true},
		{"crlf", "a = 1\r\n", "a = 1\r\n\r\n[mcp_servers.hm]\r\ncommand = \"hm\"\r\nargs = [\"mcp\"]\r\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := setCodexMCP("config.toml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want || changed != tc.changed {
				t.Errorf("changed %v, want %v\n%s", changed, tc.changed, unifiedDiff("want", "got", []byte(tc.want), out))
			}
			again, changed2, err := setCodexMCP("config.toml", out)
			if err != nil || changed2 || string(again) != string(out) {
				t.Errorf("second run: changed %v, err %v", changed2, err)
			}
		})
	}
}

func TestCodexMCPRefused(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"syntax", "a = 1\n[mcp_servers.hm\n", "config.toml:2:16: expected ']'"},
		{"duplicate key", "a = 1\na = 2\n", "config.toml:2:1: "},
		{"mcp_servers not a table", "mcp_servers = 3\n", "config.toml: mcp_servers is not a table"},
		{"dotted keys", "[mcp_servers]\nhm.command = \"x\"\n", "config.toml:2: mcp_servers or mcp_servers.hm is defined here with dotted keys or an inline table"},
		{"inline hm", "[mcp_servers]\nhm = { command = \"x\" }\n", "config.toml:2: mcp_servers or mcp_servers.hm is defined here"},
		{"inline servers", "mcp_servers = { docs = { command = \"d\" } }\n", "config.toml:1: mcp_servers or mcp_servers.hm is defined here"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := setCodexMCP("config.toml", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q…", err, tc.want)
			}
		})
	}
}

// FuzzCodexMCP: whatever the config, hm init either refuses it or gives a
// config that decodes, runs hm mcp, differs from the old one in nothing
// but mcp_servers.hm's command and args, and is left alone the next time.
func FuzzCodexMCP(f *testing.F) {
	for _, s := range []string{"", "a = 1", hmTableTOML, "[mcp_servers.hm]\ncommand = \"x\"", "[mcp_servers.hm.env]\nA=1", "[[mcp_servers.hm.x]]\n", "# c\n[mcp_servers]\n[mcp_servers.hm] # c\nargs = []\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, changed, err := setCodexMCP("f", data)
		if err != nil {
			return
		}
		old, _ := decodeTOML("f", data)
		if err := verifyCodexMCP(old, out); err != nil {
			t.Fatalf("%q → %q: %v", data, out, err)
		}
		if !changed && string(out) != string(data) {
			t.Fatalf("unchanged but different")
		}
		if again, c, err := setCodexMCP("f", out); err != nil || c || string(again) != string(out) {
			t.Fatalf("second run on %q: changed %v, err %v", out, c, err)
		}
	})
}
