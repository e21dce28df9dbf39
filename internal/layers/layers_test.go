package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// top is the program's top: it wires the layers and nothing below imports it.
var top = []string{"hm/internal/hub/...", "hm/internal/cli/...", "hm/cmd/..."}

// rule constrains what the packages matching pkgs depend on (transitively,
// without tests): only the hm packages in only (when set), and none in never.
// A pattern ending in "/..." matches the package and those below it.
type rule struct {
	name  string
	pkgs  []string
	only  []string
	never []string
	// exception, when set, is why the rule is broken today: the test then
	// requires the breach, so that the exception goes when it is fixed.
	exception string
}

// rules hold what folderRank (folders_test.go) cannot: no import runs up
// the folders, so these name only what a folder must not take from its
// siblings and the folders below it.
var rules = []rule{
	{name: "broker never imports agent or triggers", pkgs: []string{"hm/broker/..."},
		never: []string{"hm/agent/...", "hm/triggers/..."}},
	{name: "journal imports no agent", pkgs: []string{"hm/journal/..."}, never: []string{"hm/agent/..."}},
	{name: "agent imports no journal", pkgs: []string{"hm/agent/..."}, never: []string{"hm/journal/..."}},
	{name: "triggers imports no broker but its proto, no agent, no journal", pkgs: []string{"hm/triggers/..."},
		never: []string{"hm/broker", "hm/broker/telegram/...", "hm/agent/...", "hm/journal/..."}},
	// nor net/http and crypto/tls (internal/client speaks WebSocket
	// itself): they doubled the binary every pane starts per message (#36).
	{name: "hm-send links no SQLite, NATS, Telegram, MCP or HTTP client", pkgs: []string{"hm/cmd/hm-send", "hm/internal/sendcmd", "hm/internal/cmdline"},
		never: append([]string{"zombiezen.com/go/sqlite/...", "modernc.org/sqlite/...", "github.com/nats-io/...",
			"net/http", "crypto/tls", "github.com/coder/websocket/...",
			"github.com/go-telegram/...", "github.com/modelcontextprotocol/...",
			"hm/broker", "hm/broker/telegram/...", "hm/journal/...", "hm/agent/..."}, top...)},
}

// isHM reports whether the package path is one of the module's.
func isHM(path string) bool { return path == "hm" || strings.HasPrefix(path, "hm/") }

// matches reports whether path matches one of patterns.
func matches(path string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		if base, ok := strings.CutSuffix(p, "/..."); ok {
			return path == base || strings.HasPrefix(path, base+"/")
		}
		return path == p
	})
}

// hmList returns every hm package with the packages go list names in its
// field (Deps: all it depends on; Imports: what its non-test files import).
func hmList(t *testing.T, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join ."+field+" \" \"}}", "hm/...").Output()
	if err != nil {
		t.Fatalf("go list hm/...: %v", err)
	}
	all := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			all[f[0]] = f[1:]
		}
	}
	if len(all) < 20 {
		t.Fatalf("go list found only %d packages in hm/...", len(all))
	}
	return all
}

// breaches returns what the packages r governs depend on against r.
func (r rule) breaches(all map[string][]string) (governed int, found []string) {
	for pkg, ds := range all {
		if !matches(pkg, r.pkgs) {
			continue
		}
		governed++
		for _, d := range ds {
			if (r.only != nil && isHM(d) && !matches(d, r.only)) || matches(d, r.never) {
				found = append(found, pkg+" -> "+d)
			}
		}
	}
	slices.Sort(found)
	return governed, found
}

func TestLayers(t *testing.T) {
	all := hmList(t, "Deps")
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			governed, found := r.breaches(all)
			if governed == 0 {
				t.Fatalf("no package matches %v: the rule governs nothing", r.pkgs)
			}
			switch {
			case r.exception == "" && len(found) > 0:
				t.Errorf("%d dependencies break the rule:\n%s", len(found), strings.Join(found, "\n"))
			case r.exception != "" && len(found) == 0:
				t.Errorf("the rule holds now: drop its exception (%s)", r.exception)
			case r.exception != "":
				t.Logf("known exception (%s): %d dependencies, e.g. %s", r.exception, len(found), found[0])
			}
		})
	}
}
