package broker

import "testing"

// TestTokensAccept: a token accepted for a role (an adopted pane's, from
// the hub before) identifies that role beside the issued one, and Revoke
// ends both.
func TestTokensAccept(t *testing.T) {
	t.Parallel()
	tk := NewTokens("operator-secret")
	issued := tk.Issue("builder")
	tk.Accept("builder", "old-token")
	tk.Accept("builder", "operator-secret") // never turns the operator into a role
	for _, tc := range []struct {
		token string
		want  Identity
	}{
		{issued, Identity{Role: "builder"}},
		{"old-token", Identity{Role: "builder"}},
		{"operator-secret", Identity{Operator: true}},
	} {
		if id, ok := tk.Check(tc.token); !ok || id != tc.want {
			t.Errorf("Check(%q) = %+v, %v; want %+v", tc.token, id, ok, tc.want)
		}
	}
	// A trigger file signed with a token (SPEC §7) is the same identity:
	// the adopted program's fallback file was refused bad_signature while
	// its hm send over WebSocket was let in.
	signedWith := func(tok string) func(string) bool { return func(c string) bool { return c == tok } }
	for _, tc := range []struct {
		role, token string
		want        Identity
		ok          bool
	}{
		{"builder", issued, Identity{Role: "builder"}, true},
		{"builder", "old-token", Identity{Role: "builder"}, true},
		{"oracle", "old-token", Identity{}, false},
		{"oracle", "operator-secret", Identity{Role: "oracle", Operator: true}, true},
	} {
		if id, ok := tk.Match(tc.role, signedWith(tc.token)); ok != tc.ok || id != tc.want {
			t.Errorf("Match(%q, signed with %q) = %+v, %v; want %+v, %v", tc.role, tc.token, id, ok, tc.want, tc.ok)
		}
	}
	tk.Revoke("builder")
	for _, tok := range []string{issued, "old-token"} {
		if id, ok := tk.Check(tok); ok {
			t.Errorf("after Revoke, Check(%q) = %+v", tok, id)
		}
		if id, ok := tk.Match("builder", signedWith(tok)); ok {
			t.Errorf("after Revoke, Match(builder, signed with %q) = %+v", tok, id)
		}
	}
}
