package layers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// folderRank ranks the module's folders from the ground up. A package's
// non-test files may import the packages of its own folder and of folders
// of lower rank, never of a folder of higher rank. Folders of one rank are
// siblings: whether they may import each other is for the rules of
// layers_test.go (journal and agent never do; triggers takes only
// broker/proto from broker).
var folderRank = map[string]int{
	"internal/ground": 0, // the vocabulary every layer may use
	"roles":           1, // team, roles and the header grammar
	"journal":         2, // the ledger
	"agent":           2, // panes
	"broker":          3, // routes over journal; broker/proto is the wire
	"triggers":        3, // trigger files, over broker/proto
	"internal":        4, // the wings (client, cockpit, mcpserver, federation, …) and the top (hub, cli)
	"cmd":             5, // the binaries
	"scripts":         5, // developer programs
}

// folderOf is the folder whose rank governs the hm package pkg: the ground
// for internal/ground and below, else pkg's first element below the module.
func folderOf(pkg string) string {
	rel := strings.TrimPrefix(pkg, "hm/")
	if rel == "internal/ground" || strings.HasPrefix(rel, "internal/ground/") {
		return "internal/ground"
	}
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// upward returns each import of imports (an hm package with the hm
// packages its non-test files import) from a folder to a folder of higher
// rank, and each package whose folder has no rank.
func upward(imports map[string][]string) []string {
	var found []string
	for pkg, ims := range imports {
		from := folderOf(pkg)
		rank, ok := folderRank[from]
		if !ok {
			found = append(found, fmt.Sprintf("%s: folder %s has no rank in folderRank", pkg, from))
			continue
		}
		for _, im := range ims {
			if !isHM(im) {
				continue
			}
			to := folderOf(im)
			if r, ok := folderRank[to]; ok && r > rank {
				found = append(found, fmt.Sprintf("%s (%s, rank %d) imports %s (%s, rank %d)", pkg, from, rank, im, to, r))
			}
		}
	}
	slices.Sort(found)
	return found
}

func TestFolderRule(t *testing.T) {
	tests := []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{"down and across ranks", map[string][]string{
			"hm/cmd/hm":              {"hm/internal/cli"},
			"hm/internal/hub":        {"hm/broker", "hm/agent", "hm/internal/ground/status"},
			"hm/broker":              {"hm/journal", "hm/roles", "hm/internal/ground/msgid"},
			"hm/triggers":            {"hm/broker/proto"},
			"hm/journal":             {"hm/agent"}, // siblings: for the rules, not the ranks
			"hm/roles":               {"hm/internal/ground/status"},
			"hm/internal/ground/msg": {"hm/internal/ground/status"},
		}, nil},
		{"the layout before the move: ground in internal/", map[string][]string{
			"hm/broker":         {"hm/internal/msgid", "hm/journal"},
			"hm/internal/hub":   {"hm/internal/msgid"},
			"hm/internal/msgid": nil,
		}, []string{"hm/broker (broker, rank 3) imports hm/internal/msgid (internal, rank 4)"}},
		{"ground imports a layer", map[string][]string{
			"hm/internal/ground/status": {"hm/roles"},
		}, []string{"hm/internal/ground/status (internal/ground, rank 0) imports hm/roles (roles, rank 1)"}},
		{"a wing imports a binary", map[string][]string{
			"hm/internal/cli": {"hm/cmd/hm"},
		}, []string{"hm/internal/cli (internal, rank 4) imports hm/cmd/hm (cmd, rank 5)"}},
		{"a folder beside ground is not ground", map[string][]string{
			"hm/roles": {"hm/internal/groundwork"},
		}, []string{"hm/roles (roles, rank 1) imports hm/internal/groundwork (internal, rank 4)"}},
		{"a new folder needs a rank", map[string][]string{
			"hm/plugins/x": {"hm/roles"},
		}, []string{"hm/plugins/x: folder plugins has no rank in folderRank"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := upward(tt.imports); !slices.Equal(got, tt.want) {
				t.Errorf("upward() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestFolders holds the module's own imports to folderRank.
func TestFolders(t *testing.T) {
	imports := hmList(t, "Imports")
	edges := map[[2]string]bool{}
	for pkg, ims := range imports {
		for _, im := range ims {
			if from, to := folderOf(pkg), folderOf(im); isHM(im) && from != to {
				edges[[2]string{from, to}] = true
			}
		}
	}
	if len(edges) < 10 {
		t.Fatalf("found only %d folder-to-folder imports; the listing is broken", len(edges))
	}
	if found := upward(imports); len(found) > 0 {
		t.Errorf("%d imports run up the folders:\n%s", len(found), strings.Join(found, "\n"))
	}
	t.Logf("%d folder-to-folder imports", len(edges))
}
