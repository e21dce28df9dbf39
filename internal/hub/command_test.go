package hub

import "testing"

// TestCommandProblem: the start-time check of a pane command names a
// program missing from PATH, and looks past the shell words that run the
// next one (exec, command, nohup, time) and VAR=value prefixes; before,
// "exec env X=1 prog" was reported as "exec" not found, and a compound
// command (while ...; do ...; done, hm up --demo's panes) as "while".
func TestCommandProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    string
	}{
		{"sh", ""},
		{"FOO=1 sh -c true", ""},
		{"exec env FOO=1 sh", ""},
		{"command sh", ""},
		{"nohup time sh", ""},
		{"while printf '%s> ' architect; IFS= read -r line; do :; done", ""}, // the demo team's reader (roles.DemoCommand)
		{"for f in a; do sh; done", ""},
		{"exec", "empty command"},
		{"", "empty command"},
		{"no-such-program-hm-test --flag", `command "no-such-program-hm-test" not found on PATH`},
		{"exec no-such-program-hm-test", `command "no-such-program-hm-test" not found on PATH`},
	} {
		if got := commandProblem(tc.command); got != tc.want {
			t.Errorf("commandProblem(%q) = %q, want %q", tc.command, got, tc.want)
		}
	}
}
