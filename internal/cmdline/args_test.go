package cmdline

import (
	"bytes"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sendFlags() (*flag.FlagSet, *bool, *string, *time.Duration) {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	j := fs.Bool("json", false, "")
	r := fs.String("role", "", "")
	w := fs.Duration("wait", 0, "")
	return fs, j, r, w
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		pos     []string
		json    bool
		role    string
		wait    time.Duration
		wantErr string
	}{
		{args: []string{"builder", "tests", "pass"}, pos: []string{"builder", "tests", "pass"}},
		{args: []string{"builder", "hi", "--json", "--role", "architect"}, pos: []string{"builder", "hi"}, json: true, role: "architect"},
		{args: []string{"--role=oracle", "arch", "x"}, pos: []string{"arch", "x"}, role: "oracle"},
		{args: []string{"builder", "--wait", "2s", "x"}, pos: []string{"builder", "x"}, wait: 2 * time.Second},
		{args: []string{"builder", "--", "--json", "-x"}, pos: []string{"builder", "--json", "-x"}},
		{args: []string{"builder", "-5", "degrees"}, pos: []string{"builder", "-5", "degrees"}},
		{args: []string{"builder", "-all good"}, pos: []string{"builder", "-all good"}},
		{args: []string{"builder", "-x"}, wantErr: "unknown flag -x"},
		{args: []string{"builder", "--bogus"}, wantErr: "unknown flag --bogus"},
		{args: []string{"builder", "--role"}, wantErr: "needs a value"},
		{args: []string{"-h"}, wantErr: "help requested"},
		{args: []string{"builder", "--wait", "soon"}, wantErr: `--wait "soon": want a duration`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs, j, r, w := sendFlags()
			pos, err := ParseArgs(fs, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pos, tt.pos) || *j != tt.json || *r != tt.role || *w != tt.wait {
				t.Fatalf("got %q json=%v role=%q wait=%v", pos, *j, *r, *w)
			}
		})
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("builder\x00hello\x00--json")
	f.Add("--role=x\x00--\x00-y")
	f.Add("-\x00--\x00---")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		fs, _, _, _ := sendFlags()
		pos, err := ParseArgs(fs, args)
		if err != nil {
			return
		}
		// Every positional comes from the input, in order.
		i := 0
		for _, p := range pos {
			for i < len(args) && args[i] != p {
				i++
			}
			if i == len(args) {
				t.Fatalf("positional %q not in %q", p, args)
			}
			i++
		}
	})
}

// TestFlagLike: what is taken as a flag, as the pattern
// ^--?[A-Za-z][A-Za-z0-9-]*(=.*)?$ took it before flagLike replaced it.
func TestFlagLike(t *testing.T) {
	cases := []struct {
		arg  string
		want bool
	}{
		{"-x", true}, {"--json", true}, {"--no-fallback", true}, {"--timeout=5s", true}, {"-p=", true},
		{"--a1-b2", true}, {"--role=a=b", true}, {"--file=a b", true},
		{"-5", false}, {"--5", false}, {"---x", false}, {"-", false}, {"--", false}, {"--=x", false},
		{"-all good", false}, {"x", false}, {"", false}, {"--na_me", false}, {"--ñ", false},
		{"--file=a\nb", false}, {"--x\n", false}, {"-x-", true},
	}
	for _, tc := range cases {
		if got := flagLike(tc.arg); got != tc.want {
			t.Errorf("flagLike(%q) = %v, want %v", tc.arg, got, tc.want)
		}
	}
}
