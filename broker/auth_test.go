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
	tk.Revoke("builder")
	for _, tok := range []string{issued, "old-token"} {
		if id, ok := tk.Check(tok); ok {
			t.Errorf("after Revoke, Check(%q) = %+v", tok, id)
		}
	}
}
