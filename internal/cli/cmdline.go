package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"hm/internal/client"
	"hm/internal/cmdline"
	"hm/internal/ground/layout"
)

// What every command shares lives in internal/cmdline, where hm-send
// (internal/sendcmd) uses it too; the names below keep hm's commands
// reading as they did.

// Env is what a command may touch of the process (cmdline.Env).
type Env = cmdline.Env

// OSEnv is the real process environment.
func OSEnv() Env { return cmdline.OSEnv() }

// Exit codes.
const (
	ExitOK     = cmdline.ExitOK
	ExitFailed = cmdline.ExitFailed
	ExitUsage  = cmdline.ExitUsage
)

// versionFlag asks any of hm, hm-send and hm-bg for its version.
const versionFlag = cmdline.VersionFlag

func printVersion(w io.Writer, name string) { cmdline.PrintVersion(w, name) }

func newFlags(name string, _ Env) *flag.FlagSet { return cmdline.NewFlags(name) }

func rootFlag(fs *flag.FlagSet) *string { return cmdline.RootFlag(fs) }

func portFlag(fs *flag.FlagSet) *int { return cmdline.PortFlag(fs) }

func jsonFlag(fs *flag.FlagSet, what string) *bool { return cmdline.JSONFlag(fs, what) }

func findRoot(env Env, root string) (layout.Layout, error) { return cmdline.FindRoot(env, root) }

func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	return cmdline.ParseArgs(fs, args)
}

func hubError(port int, root string, err error) error { return cmdline.HubError(port, root, err) }

// usageError is cmdline.UsageError with the summary of the command fs
// is named after (its entry in the command table).
func usageError(env Env, fs *flag.FlagSet, synopsis string, err error) int {
	summary := ""
	if c, _, lerr := lookupPath(strings.Fields(fs.Name())); lerr == nil {
		summary = c.summary
	}
	return cmdline.UsageError(env, fs, synopsis, summary, err)
}

// clientConfig is the hub a client command talks to, found by
// cmdline.Discover (SPEC §12): root, port, token, role.
type clientConfig struct {
	layout layout.Layout
	port   int
	token  string
	role   string
}

// discover is cmdline.Discover.
func discover(env Env, root string, port int, role string) (clientConfig, error) {
	h, err := cmdline.Discover(env, root, port, role)
	return clientConfig{layout: h.Layout, port: h.Port, token: h.Token, role: h.Role}, err
}

func (c clientConfig) hub() cmdline.Hub {
	return cmdline.Hub{Layout: c.layout, Port: c.port, Token: c.token, Role: c.role}
}

func (c clientConfig) url() string { return c.hub().URL() }

// dial connects to the hub with token (not registered); a hub that is not
// there is cmdline's "no hub is running" error.
func (c clientConfig) dial(ctx context.Context, token string) (*client.Client, error) {
	return c.hub().Dial(ctx, token)
}

// connect dials and registers within ctx.
func (c clientConfig) connect(ctx context.Context, listen bool) (*client.Client, error) {
	return c.hub().Connect(ctx, listen)
}

// dialHub finds the hub --root and --port name and connects to it as role
// within ctx (registered, not listening). On failure it prints
// "<cmd>: …" and returns nil.
func dialHub(ctx context.Context, env Env, cmd, root string, port int, role string) *client.Client {
	cfg, err := discover(env, root, port, role)
	if err != nil {
		fmt.Fprintln(env.Stderr, cmd+":", err)
		return nil
	}
	cl, err := cfg.connect(ctx, false)
	if err != nil {
		fmt.Fprintln(env.Stderr, cmd+":", err)
		return nil
	}
	return cl
}
