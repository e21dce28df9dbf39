package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/status"
)

// TokenDialFunc connects to the hub and registers with token (the bearer
// token of an HTTP request).
type TokenDialFunc func(ctx context.Context, token string) (*client.Client, proto.Registered, error)

// HTTPConfig configures an HTTPHandler.
type HTTPConfig struct {
	// Dial connects and registers with a request's token (required).
	Dial    TokenDialFunc
	Version string
	Timeout time.Duration
	Logger  *slog.Logger
}

// HTTPHandler is `hm mcp --http`: Streamable HTTP for clients on this
// machine. Every request needs "Authorization: Bearer <token>", a token the
// hub accepts (a pane's HM_TOKEN, or the operator secret); the hub is the
// judge, by registering with it, so the role is the token's. Each token
// has its own server and hub connection, and a session is bound to the
// token that opened it. Requests from a non-loopback address, or with an
// Origin header (a browser), get 403.
type HTTPHandler struct {
	cfg     HTTPConfig
	mu      sync.Mutex
	servers map[string]*Server // by token
	h       http.Handler
}

// NewHTTPHandler returns the handler; Close ends its hub connections.
func NewHTTPHandler(cfg HTTPConfig) *HTTPHandler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hh := &HTTPHandler{cfg: cfg, servers: map[string]*Server{}}
	stream := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil {
			return nil
		}
		hh.mu.Lock()
		defer hh.mu.Unlock()
		if s := hh.servers[ti.Extra["token"].(string)]; s != nil {
			return s.MCP()
		}
		return nil
	}, &mcp.StreamableHTTPOptions{Logger: cfg.Logger})
	hh.h = auth.RequireBearerToken(hh.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	return hh
}

// verify accepts a token the hub accepts: a known one at once, a new one
// after a register (then it gets its server).
func (hh *HTTPHandler) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	info := &auth.TokenInfo{UserID: hex.EncodeToString(sum[:]), Extra: map[string]any{"token": token}}
	hh.mu.Lock()
	_, known := hh.servers[token]
	hh.mu.Unlock()
	if known {
		return info, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, _, err := hh.cfg.Dial(ctx, token)
	if err != nil {
		var pe *proto.Error
		if errors.As(err, &pe) && pe.Code == status.CodeUnauthorized {
			return nil, fmt.Errorf("%w: the hub refused the token", auth.ErrInvalidToken)
		}
		return nil, err
	}
	cl.Close()
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.servers[token] == nil {
		hh.servers[token] = New(Config{
			Dial:    func(ctx context.Context) (*client.Client, proto.Registered, error) { return hh.cfg.Dial(ctx, token) },
			Version: hh.cfg.Version, Timeout: hh.cfg.Timeout, Logger: hh.cfg.Logger,
		})
	}
	return info, nil
}

// ServeHTTP refuses what is not a local, non-browser request, then serves.
func (hh *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackAddr(r.RemoteAddr) {
		http.Error(w, "forbidden: hm mcp serves loopback clients only", http.StatusForbidden)
		return
	}
	if r.Header.Get("Origin") != "" {
		http.Error(w, "forbidden: requests from a browser (Origin) are refused", http.StatusForbidden)
		return
	}
	hh.h.ServeHTTP(w, r)
}

// Close closes every hub connection.
func (hh *HTTPHandler) Close() {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	for _, s := range hh.servers {
		s.Close()
	}
}

func loopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackListenAddr reports whether a --listen address names a loopback
// host (127.0.0.0/8, ::1 or localhost).
func LoopbackListenAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	return loopbackAddr(host)
}
