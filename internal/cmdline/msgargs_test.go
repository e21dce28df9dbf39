package cmdline

import (
	"bytes"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

// messageFlags is hm send's flag set (the real one, so the table tests the
// flags users have).
func messageFlags() (*flag.FlagSet, map[string]*string) {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	vals := map[string]*string{}
	for _, n := range []string{"root", "role", "priority", "file", "message-id"} {
		vals[n] = fs.String(n, "", "")
	}
	fs.Int("port", 0, "")
	fs.Bool("stdin", false, "")
	fs.Bool("json", false, "")
	fs.Bool("no-fallback", false, "")
	fs.Duration("timeout", 5*time.Second, "")
	fs.Duration("wait", 0, "")
	return fs, vals
}

func TestParseMessageArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		pos     []string
		role    string
		set     []string // flags that must be set
		wantErr string
	}{
		{name: "plain", args: []string{"builder", "tests", "pass"}, pos: []string{"builder", "tests", "pass"}},
		// The cases: words in the middle of a message are text.
		{name: "flag and value mid-message", args: []string{"architect", "set", "--port", "0", "on", "the", "hub"},
			pos: []string{"architect", "set", "--port", "0", "on", "the", "hub"}},
		{name: "help at the end", args: []string{"architect", "please", "run", "make", "--help"}, wantErr: "quote the message"},
		{name: "short flag mid-message", args: []string{"architect", "use", "-v", "for", "verbose"},
			pos: []string{"architect", "use", "-v", "for", "verbose"}},
		{name: "known flag mid-message", args: []string{"architect", "run", "--json", "now"},
			pos: []string{"architect", "run", "--json", "now"}},
		// SquidRun's form: one trailing run after the message.
		{name: "trailing role", args: []string{"builder", "(ARCH #1): go", "--role", "architect"},
			pos: []string{"builder", "(ARCH #1): go"}, role: "architect", set: []string{"role"}},
		{name: "trailing run of several", args: []string{"builder", "hi", "--json", "--role=oracle", "--wait", "2s"},
			pos: []string{"builder", "hi"}, role: "oracle", set: []string{"json", "wait"}},
		{name: "only the last run counts", args: []string{"builder", "run", "--json", "now", "--json"},
			pos: []string{"builder", "run", "--json", "now"}, set: []string{"json"}},
		{name: "leading flags", args: []string{"--role", "oracle", "--json", "builder", "hi"},
			pos: []string{"builder", "hi"}, role: "oracle", set: []string{"json"}},
		{name: "flag right after the target is text", args: []string{"builder", "--json", "hi"},
			pos: []string{"builder", "--json", "hi"}},
		{name: "dash-dash before the message", args: []string{"builder", "--", "--json", "--role", "x"},
			pos: []string{"builder", "--json", "--role", "x"}},
		{name: "dash-dash before the target", args: []string{"--", "builder", "--json"}, pos: []string{"builder", "--json"}},
		{name: "dash-dash in the text stops the trailing run", args: []string{"builder", "a", "--", "b", "--json"},
			pos: []string{"builder", "a", "--", "b", "--json"}},
		{name: "negative number", args: []string{"builder", "-5", "degrees"}, pos: []string{"builder", "-5", "degrees"}},
		{name: "trailing short word stays text", args: []string{"builder", "lower", "by", "-5"}, pos: []string{"builder", "lower", "by", "-5"}},
		{name: "one-argument message with dashes", args: []string{"builder", "-all good"}, pos: []string{"builder", "-all good"}},
		{name: "unknown trailing long flag", args: []string{"builder", "hello", "--jsno"}, wantErr: "unknown flag --jsno after the message"},
		{name: "unknown long flag before a run", args: []string{"builder", "hello", "--jsno", "--role", "x"}, wantErr: "unknown flag --jsno"},
		{name: "known flag without value at the end", args: []string{"builder", "hello", "--role"}, wantErr: "--role needs a value"},
		{name: "bad value in the run", args: []string{"builder", "x", "--wait", "soon"}, wantErr: `--wait "soon": want a duration`},
		{name: "unknown leading flag", args: []string{"--bogus", "builder", "x"}, wantErr: "unknown flag --bogus"},
		{name: "help alone", args: []string{"--help"}, wantErr: "help requested"},
		{name: "h alone", args: []string{"-h"}, wantErr: "help requested"},
		{name: "help with others", args: []string{"--help", "builder"}, wantErr: "takes no other arguments"},
		{name: "no message", args: []string{"builder"}, pos: []string{"builder"}},
		{name: "empty", args: nil, pos: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, vals := messageFlags()
			pos, err := ParseMessageArgs(fs, tt.args, 1)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q (pos %q)", err, tt.wantErr, pos)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pos, tt.pos) {
				t.Fatalf("positionals %q, want %q", pos, tt.pos)
			}
			if *vals["role"] != tt.role {
				t.Errorf("role = %q, want %q", *vals["role"], tt.role)
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			for _, n := range tt.set {
				if !set[n] {
					t.Errorf("flag --%s not set", n)
				}
			}
		})
	}
}

func TestParseMessageArgsQuery(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	limit := fs.Int("limit", 20, "")
	pos, err := ParseMessageArgs(fs, []string{"--limit", "5", "tests", "-pass", "--limit", "3"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pos, []string{"tests", "-pass"}) || *limit != 3 {
		t.Fatalf("pos %q limit %d", pos, *limit)
	}
}

// FuzzParseMessageArgs: the parser never panics; the text it returns is a
// contiguous run of the input (no word in the middle is ever taken as a
// flag), and any error is one of the documented ones.
func FuzzParseMessageArgs(f *testing.F) {
	f.Add("architect\x00set\x00--port\x000\x00on\x00the\x00hub")
	f.Add("builder\x00hi\x00--json\x00--role=x")
	f.Add("--\x00builder\x00--\x00--json")
	f.Add("-h")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		fs, _ := messageFlags()
		pos, err := ParseMessageArgs(fs, args, 1)
		if err != nil {
			return
		}
		if len(pos) < 2 {
			return
		}
		text := pos[1:]
		for start := 0; start+len(text) <= len(args); start++ {
			if reflect.DeepEqual(args[start:start+len(text)], text) {
				return
			}
		}
		t.Fatalf("text %q is not a contiguous run of %q", text, args)
	})
}
