package layout

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"hm/internal/ground/atomicfile"
)

// GitIgnore is .squidrun/.gitignore as hm writes it (issue #33): .squidrun/
// is one machine's hm state, and runtime/ holds the operator token, the
// ledger key and the ledger, so git ignores all of it except the team
// definition, settings.json, and this file.
const GitIgnore = `# Written by hm: .squidrun/ is this machine's hm state. runtime/ holds secrets
# (hub-token, ledger-key) and the ledger; triggers/, handoffs/, coord/,
# app-status.json and init.json are local too. Only settings.json, the team
# definition, is meant to be committed.
*
!.gitignore
!settings.json
`

// GitIgnorePath is .squidrun/.gitignore.
func (l Layout) GitIgnorePath() string { return filepath.Join(l.State(), ".gitignore") }

// WriteGitIgnore writes GitIgnore (0600, like everything hm writes there)
// unless .squidrun/.gitignore exists: a person's own is left as it is. It
// reports whether it wrote the file; .squidrun/ must exist.
func (l Layout) WriteGitIgnore() (bool, error) {
	err := atomicfile.WriteNew(l.GitIgnorePath(), []byte(GitIgnore), 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("git-ignore .squidrun: %w", err)
	}
	return true, nil
}

// HasGitIgnoreRules reports whether data, a .squidrun/.gitignore, holds
// GitIgnore's rules and no others (comments and blank lines aside).
func HasGitIgnoreRules(data []byte) bool {
	return slices.Equal(gitIgnoreRules([]byte(GitIgnore)), gitIgnoreRules(data))
}

func gitIgnoreRules(data []byte) []string {
	var rules []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimRight(l, " \t\r")
		if len(l) > 0 && l[0] != '#' {
			rules = append(rules, string(l))
		}
	}
	return rules
}
