package layout

import (
	"os"
	"testing"
)

// Ensure writes .squidrun/.gitignore (0600) when there is none and leaves a
// person's own as it is.
func TestEnsureGitIgnore(t *testing.T) {
	tests := []struct {
		name, existing, want string
	}{
		{"none", "", GitIgnore},
		{"a person's own", "runtime/\n", "runtime/\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			if tc.existing != "" {
				if err := os.MkdirAll(l.State(), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(l.GitIgnorePath(), []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Ensure(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(l.GitIgnorePath())
			if err != nil || string(data) != tc.want {
				t.Fatalf(".gitignore %q %v, want %q", data, err, tc.want)
			}
			if st, _ := os.Stat(l.GitIgnorePath()); tc.existing == "" && st.Mode().Perm() != 0o600 {
				t.Errorf("mode %o, want 600", st.Mode().Perm())
			}
		})
	}
}

func TestHasGitIgnoreRules(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{GitIgnore, true},
		{"# my words\r\n*\r\n\r\n!.gitignore\r\n!settings.json   \r\n", true},
		{"*\n!.gitignore\n", false},
		{GitIgnore + "!runtime/\n", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := HasGitIgnoreRules([]byte(tc.in)); got != tc.want {
			t.Errorf("HasGitIgnoreRules(%q) = %v", tc.in, got)
		}
	}
}
