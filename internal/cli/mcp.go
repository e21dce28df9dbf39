package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/buildinfo"
	"hm/internal/mcpserver"
)

const mcpSynopsis = "hm mcp [--root D] [--port N] [--role R] [--channel | --http [--listen 127.0.0.1:0]]"

// runMCP: `hm mcp` serves hm's tools to an MCP client over stdin/stdout
// (docs/protocol.md §13). It finds the hub, its token and its role as
// hm-send does, again at each reconnect, so it may start before the hub.
func runMCP(ctx context.Context, env Env, args []string) int {
	fs := newFlags("mcp", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	role := fs.String("role", "", "role to act as (default $SQUIDRUN_ROLE, else user); a pane's $HM_TOKEN is valid for its own role only")
	httpMode := fs.Bool("http", false, "serve Streamable HTTP on a loopback address instead of stdio; each request needs Authorization: Bearer <a pane's HM_TOKEN or the operator token>")
	channel := fs.Bool("channel", false, "also push each new message for the role to Claude Code as a notifications/claude/channel event (experimental claude/channel capability; stdio only)")
	listen := fs.String("listen", "127.0.0.1:0", "with --http: the loopback address to listen on")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 || *channel && *httpMode {
		if err == nil && len(pos) > 0 {
			err = errors.New("hm mcp takes no arguments")
		} else if err == nil {
			err = errors.New("--channel is for stdio (Claude Code starts channel servers itself); not with --http")
		}
		return usageError(env, fs, mcpSynopsis, err)
	}
	cfg, err := discover(env, *root, *port, *role)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm mcp:", err)
		return ExitFailed
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *httpMode {
		return serveMCPHTTP(ctx, env, *root, *port, *role, *listen, log)
	}
	dial := func(ctx context.Context) (*client.Client, proto.Registered, error) {
		cfg, err := discover(env, *root, *port, *role)
		if err != nil {
			return nil, proto.Registered{}, err
		}
		if cfg.token == "" {
			return nil, proto.Registered{}, fmt.Errorf("no token for the hub: $HM_TOKEN is not set and %s does not exist; run hm mcp in an hm pane (it sets HM_TOKEN and SQUIDRUN_ROLE) or in a root where hm up has run", cfg.layout.Token())
		}
		cl, err := cfg.dial(ctx, cfg.token)
		if err != nil {
			return nil, proto.Registered{}, err
		}
		reg, err := cl.Register(ctx, cfg.role, cfg.token, false)
		if err != nil {
			cl.CloseNow()
			return nil, proto.Registered{}, err
		}
		return cl, reg, nil
	}
	srv := mcpserver.New(mcpserver.Config{Dial: dial, Role: cfg.role, Version: buildinfo.Version(), Logger: log, Channel: *channel})
	t := &mcp.IOTransport{Reader: readCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	run := srv.Run
	if *channel {
		run = srv.RunChannel
	}
	if err := run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintln(env.Stderr, "hm mcp:", err)
		return ExitFailed
	}
	return ExitOK
}

// serveMCPHTTP is `hm mcp --http`: the role is the bearer token's (a
// pane's HM_TOKEN), or --role for the operator token (default user).
func serveMCPHTTP(ctx context.Context, env Env, root string, port int, role, listen string, log *slog.Logger) int {
	if !mcpserver.LoopbackListenAddr(listen) {
		fmt.Fprintf(env.Stderr, "hm mcp: --listen %s: only a loopback address (127.0.0.1:N, [::1]:N, localhost:N)\n", listen)
		return ExitUsage
	}
	dial := func(ctx context.Context, token string) (*client.Client, proto.Registered, error) {
		cfg, err := discover(env, root, port, role)
		if err != nil {
			return nil, proto.Registered{}, err
		}
		cl, err := cfg.dial(ctx, token)
		if err != nil {
			return nil, proto.Registered{}, err
		}
		reg, err := cl.Register(ctx, role, token, false)
		if err != nil {
			cl.CloseNow()
			return nil, proto.Registered{}, err
		}
		return cl, reg, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm mcp:", err)
		return ExitFailed
	}
	h := mcpserver.NewHTTPHandler(mcpserver.HTTPConfig{Dial: dial, Version: buildinfo.Version(), Logger: log})
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stdout, "http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(env.Stderr, "hm mcp:", err)
		return ExitFailed
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return ExitOK
	}
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
