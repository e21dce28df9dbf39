package telegram

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		env           map[string]string
		dotenv        string // written to <root>/.env unless empty
		settingsChat  string
		settingsAllow []string
		want          Config
		enabled       bool
	}{
		{
			name:    "nothing configured",
			want:    Config{},
			enabled: false,
		},
		{
			name: "environment only",
			env: map[string]string{
				EnvToken: "1:abc", EnvChatID: "42", EnvAllowlist: "43, 44,,43", EnvAPIURL: "http://127.0.0.1:1",
			},
			want:    Config{Token: "1:abc", ChatID: "42", Allowlist: []string{"43", "44"}, APIURL: "http://127.0.0.1:1"},
			enabled: true,
		},
		{
			name: "dotenv fills unset variables, environment wins",
			env:  map[string]string{EnvChatID: "42", EnvAllowlist: ""},
			dotenv: "# hm secrets\n" +
				"export TELEGRAM_BOT_TOKEN=\"9:from-dotenv\"\n" +
				"TELEGRAM_CHAT_ID=99\n" +
				"TELEGRAM_CHAT_ALLOWLIST='7,8' \n" +
				"TELEGRAM_API_URL=http://fake:8081 # local fake\n",
			want:    Config{Token: "9:from-dotenv", ChatID: "42", Allowlist: []string{"7", "8"}, APIURL: "http://fake:8081"},
			enabled: true,
		},
		{
			name:          "settings used when env and dotenv are empty",
			env:           map[string]string{EnvToken: "1:abc", EnvChatID: "  "},
			settingsChat:  "555",
			settingsAllow: []string{"555", " 556 "},
			want:          Config{Token: "1:abc", ChatID: "555", Allowlist: []string{"555", "556"}},
			enabled:       true,
		},
		{
			name:          "env allowlist replaces settings allowlist",
			env:           map[string]string{EnvToken: "1:abc", EnvAllowlist: "10"},
			settingsChat:  "555",
			settingsAllow: []string{"556"},
			want:          Config{Token: "1:abc", ChatID: "555", Allowlist: []string{"10"}},
			enabled:       true,
		},
		{
			name:    "dotenv with CRLF and BOM",
			dotenv:  "\uFEFFTELEGRAM_BOT_TOKEN=5:crlf\r\nTELEGRAM_CHAT_ID=-100123\r\n",
			want:    Config{Token: "5:crlf", ChatID: "-100123"},
			enabled: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.dotenv != "" {
				if err := os.WriteFile(filepath.Join(root, ".env"), []byte(tt.dotenv), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string { return tt.env[k] }
			got, err := LoadConfig(root, tt.settingsChat, tt.settingsAllow, getenv)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("LoadConfig =\n %+v\nwant\n %+v", got, tt.want)
			}
			if got.Enabled() != tt.enabled {
				t.Fatalf("Enabled() = %v, want %v", got.Enabled(), tt.enabled)
			}
		})
	}
}

func TestLoadConfigUnreadableDotEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// A directory named .env cannot be read as a file.
	if err := os.Mkdir(filepath.Join(root, ".env"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvToken: "1:abc"}
	cfg, err := LoadConfig(root, "42", nil, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), ".env") {
		t.Fatalf("err = %v, want an error naming .env", err)
	}
	if cfg.Token != "1:abc" || cfg.ChatID != "42" {
		t.Fatalf("config not filled from the other sources: %+v", cfg)
	}
}

func TestLoadConfigNoRoot(t *testing.T) {
	t.Setenv(EnvToken, "3:from-process-env")
	cfg, err := LoadConfig("", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "3:from-process-env" {
		t.Fatalf("Token = %q, want the process environment's", cfg.Token)
	}
}

func TestParseDotEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments and blanks", "# c\n\n   # indented\n", map[string]string{}},
		{"plain", "A=1\nB = two words \n", map[string]string{"A": "1", "B": "two words"}},
		{"export prefix", "export A=1\nexport\tB=2\nexporter=3", map[string]string{"A": "1", "B": "2", "exporter": "3"}},
		{"double quotes with escapes", `A="x\ny \"q\" \\ # not a comment"`, map[string]string{"A": "x\ny \"q\" \\ # not a comment"}},
		{"single quotes are literal", `A='x\n # y'`, map[string]string{"A": `x\n # y`}},
		{"inline comment", "A=value # comment\nB=va#lue", map[string]string{"A": "value", "B": "va#lue"}},
		{"unterminated quote", `A="open`, map[string]string{"A": "open"}},
		{"empty value", "A=\nB=''", map[string]string{"A": "", "B": ""}},
		{"later wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"invalid lines skipped", "no equals\n=novalue\n1A=bad\nA B=bad\nOK=1", map[string]string{"OK": "1"}},
		{"equals in value", "URL=http://h/?a=b", map[string]string{"URL": "http://h/?a=b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseDotEnv(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parseDotEnv(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseDotEnv(f *testing.F) {
	f.Add("A=1\nexport B=\"x\\ny\"\n# c\nC='z' # d\n")
	f.Add("\uFEFFKEY=\"unterminated\r\n")
	f.Add("=\n==\n\"\n'\nexport\n")
	f.Fuzz(func(t *testing.T, in string) {
		got := parseDotEnv(in)
		for k := range got {
			if !validEnvName(k) {
				t.Fatalf("invalid key %q parsed from %q", k, in)
			}
		}
		// A simple value written by a tool round-trips.
		if !strings.ContainsAny(in, "\n\r\"'#\\") && validEnvName(strings.TrimSpace(in)) {
			line := "K=" + strings.TrimSpace(in)
			if v := parseDotEnv(line)["K"]; v != strings.TrimSpace(in) {
				t.Fatalf("round trip of %q gave %q", line, v)
			}
		}
	})
}
