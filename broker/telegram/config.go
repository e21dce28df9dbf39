package telegram

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables read by [LoadConfig].
const (
	EnvToken     = "TELEGRAM_BOT_TOKEN"
	EnvChatID    = "TELEGRAM_CHAT_ID"
	EnvAllowlist = "TELEGRAM_CHAT_ALLOWLIST"
	EnvAPIURL    = "TELEGRAM_API_URL"
)

// Defaults applied by [New] to zero Config fields.
const (
	DefaultAPIURL          = "https://api.telegram.org"
	DefaultPollTimeout     = 30 * time.Second
	DefaultMaxRetries      = 5
	DefaultBackoff         = time.Second
	DefaultMaxBackoff      = time.Minute
	DefaultRejectedBackoff = 5 * time.Minute
	DefaultMaxRetryAfter   = 5 * time.Minute
	DefaultRequestTimeout  = 30 * time.Second
)

// Config configures a [Relay]. Only Token is required for the relay to be on;
// everything else has a default.
type Config struct {
	// Token is the bot token. Empty means the relay is off.
	Token string
	// ChatID is the owner chat: always allowed in, and the target of the
	// `telegram` target. A numeric id or "@channelname".
	ChatID string
	// Allowlist holds further chats allowed in (ids or "@names").
	Allowlist []string
	// APIURL is the Bot API server; default https://api.telegram.org.
	// Requests go to <APIURL>/bot<token>/<method>.
	APIURL string
	// PollTimeout is the long-poll timeout of getUpdates (whole seconds are
	// sent to the server); default 30s, at least 1s.
	PollTimeout time.Duration
	// HTTPClient is used for every API request. Its Timeout, if set, must be
	// longer than PollTimeout. Default: a client with its own transport.
	HTTPClient *http.Client
	// Logger receives the relay's logs; default discards them.
	Logger *slog.Logger
	// MaxRetries bounds the retries of one outbound part after 429, 5xx or
	// network errors; default 5.
	MaxRetries int
	// Backoff is the first wait after a failed request; it doubles per
	// consecutive failure up to MaxBackoff. Default 1s.
	Backoff time.Duration
	// MaxBackoff caps Backoff's growth; default 1m.
	MaxBackoff time.Duration
	// RejectedBackoff is the wait after the API rejected the token (401/404);
	// default 5m.
	RejectedBackoff time.Duration
	// MaxRetryAfter is the longest retry_after an outbound part waits for;
	// a longer one fails the part. Default 5m.
	MaxRetryAfter time.Duration
	// RequestTimeout bounds getMe and each sendMessage attempt, and is added
	// to PollTimeout for getUpdates; default 30s.
	RequestTimeout time.Duration
}

// Enabled reports whether a token is configured, i.e. whether the relay is on.
func (c Config) Enabled() bool { return strings.TrimSpace(c.Token) != "" }

// LoadConfig builds the relay configuration from the environment (getenv,
// os.Getenv when nil), a .env file in root, and the telegram section of
// settings.json. For each variable the environment wins; the .env file fills
// variables that are unset or empty; settings.json values are used when both
// are empty. The allowlist is comma-separated. A missing .env file is not an
// error; an unreadable one is reported, and the returned Config is still
// filled from the other sources.
func LoadConfig(root string, settingsChatID string, settingsAllow []string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var dot map[string]string
	var loadErr error
	if root != "" {
		path := filepath.Join(root, ".env")
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			dot = parseDotEnv(string(data))
		case !errors.Is(err, fs.ErrNotExist):
			loadErr = fmt.Errorf("read %s: %w", path, err)
		}
	}
	get := func(key string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return strings.TrimSpace(dot[key])
	}
	cfg := Config{
		Token:  get(EnvToken),
		ChatID: get(EnvChatID),
		APIURL: get(EnvAPIURL),
	}
	if cfg.ChatID == "" {
		cfg.ChatID = strings.TrimSpace(settingsChatID)
	}
	if v := get(EnvAllowlist); v != "" {
		cfg.Allowlist = splitList(v)
	} else {
		cfg.Allowlist = splitList(strings.Join(settingsAllow, ","))
	}
	return cfg, loadErr
}

// splitList splits a comma-separated list, trimming blanks and dropping empty
// and repeated entries.
func splitList(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// parseDotEnv parses a .env file: KEY=VALUE lines, blank lines and # comments
// ignored, an optional "export " prefix, values optionally in single quotes
// (literal) or double quotes (with \n, \t, \r, \", \\ escapes). An unquoted
// value ends at " #" (an inline comment). Lines that are not assignments to a
// valid name are skipped; a later assignment wins.
func parseDotEnv(data string) map[string]string {
	out := map[string]string{}
	data = strings.TrimPrefix(data, "\uFEFF")
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		if !validEnvName(key) {
			continue
		}
		out[key] = dotEnvValue(strings.TrimSpace(value))
	}
	return out
}

// dotEnvValue decodes the right-hand side of a .env assignment.
func dotEnvValue(v string) string {
	if v == "" {
		return ""
	}
	switch v[0] {
	case '\'':
		if end := strings.IndexByte(v[1:], '\''); end >= 0 {
			return v[1 : 1+end]
		}
		return strings.TrimSpace(v[1:])
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '"':
				return b.String()
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		// unterminated: take the rest literally
		return strings.TrimSpace(v[1:])
	}
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}

// validEnvName reports whether s is a usable variable name: a letter or
// underscore, then letters, digits, underscores, dots or hyphens.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}
