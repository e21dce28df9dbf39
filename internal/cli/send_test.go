package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hm/internal/ground/layout"
	"hm/internal/ground/testutil"
	"hm/triggers"
)

// TestSendFallbackSigned: hm-send's fallback file carries an [HM-SIG:] line
// made with $HM_TOKEN, else the operator token, for the sender's role; with
// no token at all it stays unsigned.
func TestSendFallbackSigned(t *testing.T) {
	t.Parallel()
	port := testutil.ClosedPort(t)
	tests := []struct {
		name     string
		env      map[string]string
		operator string // runtime/hub-token content, "" for none
		role     string // signature role, "" when unsigned
		verifyBy string
	}{
		{"pane token", map[string]string{"HM_TOKEN": "pane-secret", "SQUIDRUN_ROLE": "Architect"}, "", "architect", "pane-secret"},
		{"operator token", nil, strings.Repeat("o", 64), "user", strings.Repeat("o", 64)},
		{"no token", nil, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			lay := layout.Layout{Root: root}
			if err := lay.Ensure(); err != nil {
				t.Fatal(err)
			}
			if tc.operator != "" {
				if err := os.WriteFile(filepath.Join(root, ".squidrun", "runtime", "hub-token"), []byte(tc.operator), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return tc.env[k] }}
			code := MainContext(t.Context(), []string{"send", "--root", root, "--port", port, "--message-id", "fb-1", "builder", "hello there"}, env)
			if code != ExitOK || !strings.Contains(errb.String(), "fallback.triggered") {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			raw, err := os.ReadFile(filepath.Join(lay.Triggers(), "builder.fb-1.txt"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := triggers.DecodeFile(raw)
			if err != nil || d.MessageID != "fb-1" || !strings.HasSuffix(d.Content, "hello there") {
				t.Fatalf("decoded %+v %v from %q", d, err, raw)
			}
			if tc.role == "" {
				if d.Sig != nil {
					t.Fatalf("signed without a token: %q", raw)
				}
				return
			}
			if d.Sig == nil || d.Sig.Role != tc.role || !d.Sig.Verify(tc.verifyBy) || d.Sig.Verify("wrong") {
				t.Fatalf("signature %+v in %q", d.Sig, raw)
			}
		})
	}
}
