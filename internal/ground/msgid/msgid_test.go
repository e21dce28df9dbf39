package msgid

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"hub form", "hm-1700000000000-abc123", true},
		{"telegram inbound", "telegram-in-42", true},
		{"trigger derived", "trg-0123456789abcdef", true},
		{"reminder", "reminder-hm-1700000000000-abc123", true},
		{"one letter", "a", true},
		{"one digit", "7", true},
		{"every allowed byte", "a.b:c_d-e", true},
		{"upper case", "ABC-1", true},
		{"inner dots", "a..b", true},
		{"max length", strings.Repeat("x", MaxLen), true},

		{"empty", "", false},
		{"too long", strings.Repeat("x", MaxLen+1), false},
		{"leading underscore", "_x", false},
		{"leading colon", ":x", false},
		{"leading hyphen (option-like)", "-x", false},
		{"leading dot (dotfile)", ".x", false},
		{"dot", ".", false},
		{"dotdot", "..", false},
		{"dotdot path", "../x", false},
		{"slash", "a/b", false},
		{"backslash", `a\b`, false},
		{"space", "a b", false},
		{"leading space", " a", false},
		{"trailing space", "a ", false},
		{"tab", "a\tb", false},
		{"newline", "a\n", false},
		{"carriage return", "a\rb", false},
		{"NUL", "a\x00b", false},
		{"DEL", "a\x7fb", false},
		{"escape", "a\x1b[2Jb", false},
		{"latin letter", "é", false},
		{"unicode after ascii", "abc\u00e9", false},
		{"fullwidth slash", "a\uff0fb", false},
		{"right-to-left override", "a\u202eb", false},
		{"invalid utf-8", "a\xffb", false},
		{"brackets (receipt trailer)", "a]b", false},
		{"glob", "a*b", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Valid(tc.id); got != tc.ok {
				t.Errorf("Valid(%q) = %v, want %v", tc.id, got, tc.ok)
			}
		})
	}
}

var spec = regexp.MustCompile(`^hm-[0-9]+-[a-z0-9]{6}$`)

func TestNew(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	seen := map[string]bool{}
	for range 100 {
		id := New(now)
		if !spec.MatchString(id) || !strings.HasPrefix(id, "hm-1700000000123-") || !Valid(id) {
			t.Fatalf("New = %q, want hm-<unixms>-<6 random> and valid", id)
		}
		seen[id] = true
	}
	if len(seen) < 95 {
		t.Errorf("New repeats: %d distinct ids of 100", len(seen))
	}
}

// FuzzValid: Valid never panics, is deterministic, and whatever it accepts is
// safe as one file-name component.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"hm-1-abcdef", "_x", "..", "a/b", "", "a\x00", "é", strings.Repeat("y", MaxLen+1), "x.txt", "-rf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		ok := Valid(id)
		if Valid(id) != ok {
			t.Fatalf("Valid(%q) not deterministic", id)
		}
		if !ok {
			return
		}
		if len(id) == 0 || len(id) > MaxLen || !utf8.ValidString(id) {
			t.Fatalf("Valid(%q): bad length or encoding", id)
		}
		if id == "." || id == ".." || id[0] == '.' || id[0] == '-' {
			t.Fatalf("Valid(%q): dot name, dotfile or option-like", id)
		}
		if strings.ContainsAny(id, "/\\\x00 \t\n\r*?[]") {
			t.Fatalf("Valid(%q): separator, NUL, space or glob byte", id)
		}
		for _, r := range id {
			if r < 0x21 || r > 0x7e {
				t.Fatalf("Valid(%q): byte %q outside printable ASCII", id, r)
			}
		}
		if filepath.Base(id) != id || filepath.Clean(id) != id {
			t.Fatalf("Valid(%q): not a single clean path component", id)
		}
		name := "builder." + id + ".txt"
		if filepath.Dir(filepath.Join("triggers", name)) != "triggers" {
			t.Fatalf("Valid(%q): %q escapes its directory", id, name)
		}
	})
}

// TestReserved: every id the hub makes for its own rows is reserved and
// valid; ids clients make (New, or their own choice) are not reserved
// unless they fall in a hub namespace.
func TestReserved(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	long := strings.Repeat("x", MaxLen)
	for _, id := range []string{TelegramIn(1002), TelegramRefused(7), TelegramOut(now), TelegramPart("hm-1-abc", 1),
		TelegramPart(TelegramOut(now), 2), TelegramPart(long, 3), Session(3, "architect"), Session(1, "builder-bg-1"),
		Reminder("hm-1-abc"), Reminder(long), TriggerPrefix + "0123456789abcdef", "TELEGRAM-IN-1", "Session-1-x", "sys-1"} {
		if !Reserved(id) {
			t.Errorf("Reserved(%q) = false", id)
		}
		if !Valid(id) {
			t.Errorf("hub id %q is not Valid", id)
		}
	}
	for _, id := range []string{New(now), "telegram", "sessions-1", "my-telegram-in-1", "trg", "hm-1-abc-part-1", "reminders", "m-1"} {
		if Reserved(id) {
			t.Errorf("Reserved(%q) = true", id)
		}
	}
	if TelegramIn(1002) != "telegram-in-1002" {
		t.Errorf("TelegramIn(1002) = %q; SPEC §11 fixes telegram-in-<update_id>", TelegramIn(1002))
	}
	if a, b := TelegramPart(long, 1), TelegramPart(long, 2); a == b || len(a) > MaxLen {
		t.Errorf("long parts: %q, %q", a, b)
	}
	if a, b := TelegramOut(now), TelegramOut(now); a == b {
		t.Errorf("TelegramOut twice in one millisecond: %q", a)
	}
}
