package cmdline

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/roles"
)

// Hub is what every client command discovers: the root, and the port,
// token and role it talks to the hub there with.
type Hub struct {
	Layout layout.Layout
	Port   int
	Token  string
	Role   string
}

// URL is the hub's WebSocket address.
func (h Hub) URL() string { return "ws://127.0.0.1:" + strconv.Itoa(h.Port) + "/" }

// Discover applies SPEC §12: port from --port, $HM_PORT/$HM_SEND_PORT
// (unless nothing listens there and hub.json names another: envPort),
// runtime/hub.json, else 9900; role from --role, $SQUIDRUN_ROLE, else user;
// token from $HM_TOKEN, else runtime/hub-token.
func Discover(env Env, root string, port int, role string) (Hub, error) {
	lay, err := FindRoot(env, root)
	if err != nil {
		return Hub{}, err
	}
	h := Hub{Layout: lay, Port: port, Role: role}
	if h.Port <= 0 {
		p, err := envPort(env, lay)
		if err != nil {
			return h, err
		}
		h.Port = p
	}
	if h.Port <= 0 {
		if info, err := lay.ReadHubInfo(); err == nil && info.Port > 0 {
			h.Port = info.Port
		}
	}
	if h.Port <= 0 {
		h.Port = 9900
	}
	if h.Role == "" {
		h.Role = env.Getenv("SQUIDRUN_ROLE")
	}
	if h.Role == "" {
		h.Role = roles.RoleUser
	}
	h.Role = strings.ToLower(h.Role)
	h.Token = env.Getenv("HM_TOKEN")
	if h.Token == "" {
		h.Token, _ = lay.ReadToken()
	}
	return h, nil
}

// envPort is the port $HM_PORT or $HM_SEND_PORT names (0 for none). A pane's
// program keeps the port of the hub that started it; after a hub restart
// the hub that adopted the program may listen elsewhere (issue #37): when
// nothing listens on the variable's port and the root's hub.json names
// another, that one is the root's hub now.
func envPort(env Env, lay layout.Layout) (int, error) {
	for _, k := range []string{"HM_PORT", "HM_SEND_PORT"} {
		v := env.Getenv(k)
		if v == "" {
			continue
		}
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return 0, fmt.Errorf("$%s=%q is not a port", k, v)
		}
		if info, err := lay.ReadHubInfo(); err == nil && info.Port > 0 && info.Port != p && !listening(p) {
			return info.Port, nil
		}
		return p, nil
	}
	return 0, nil
}

// listening reports whether something accepts connections on the loopback
// port.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Dial connects to the hub with token (not registered); a hub that is not
// there is the error HubError makes of it.
func (h Hub) Dial(ctx context.Context, token string) (*client.Client, error) {
	return h.dial(ctx, token, client.DialToken)
}

// DialPipelined is Dial returning before the hub's welcome frame
// (client.DialTokenPipelined), for a caller that writes its frames at once.
func (h Hub) DialPipelined(ctx context.Context, token string) (*client.Client, error) {
	return h.dial(ctx, token, client.DialTokenPipelined)
}

func (h Hub) dial(ctx context.Context, token string, dial func(ctx context.Context, url, token string) (*client.Client, error)) (*client.Client, error) {
	cl, err := dial(ctx, h.URL(), token)
	if err != nil {
		return nil, HubError(h.Port, h.Layout.Root, err)
	}
	return cl, nil
}

// Connect dials with the hub's token and registers as its role within ctx
// (listening for messages when listen is set).
func (h Hub) Connect(ctx context.Context, listen bool) (*client.Client, error) {
	cl, err := h.Dial(ctx, h.Token)
	if err != nil {
		return nil, err
	}
	if _, err := cl.Register(ctx, h.Role, h.Token, listen); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}
