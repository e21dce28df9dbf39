package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/broker/proto"
	"hm/internal/ground/poll"
)

// The security suite (SPEC §1, §4, §5, §7, §11): what the hub exposes, to
// whom, and where it may write.

// procSocket is one socket of /proc/net/{tcp,tcp6,udp,udp6}.
type procSocket struct {
	table  string
	local  net.IP
	port   int
	remote net.IP
	state  string
	inode  string
}

// parseProcAddr decodes "0100007F:1F90" (IPv4) or the 32-hex-digit IPv6 form
// of /proc/net tables: each 32-bit word is in host (little-endian) order.
func parseProcAddr(s string) (net.IP, int, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("bad port in %q", s)
	}
	return ip, int(port), nil
}

// procSockets lists the sockets of a /proc/<pid>/net table.
func procSockets(t *testing.T, pid int, table string) []procSocket {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no IPv6 in this kernel
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []procSocket
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 {
			continue
		}
		local, port, err := parseProcAddr(f[1])
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		remote, _, err := parseProcAddr(f[2])
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out = append(out, procSocket{table: table, local: local, port: port, remote: remote, state: f[3], inode: f[9]})
	}
	return out
}

// socketInodes returns the inodes of the sockets process pid holds open.
func socketInodes(t *testing.T, pid int) map[string]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if in, ok := strings.CutPrefix(link, "socket:["); ok {
			out[strings.TrimSuffix(in, "]")] = true
		}
	}
	return out
}

// TestSecurityLoopbackOnly checks, from /proc, that every socket the hub
// listens on is bound to 127.0.0.1 or ::1, and that the hub's port does not
// answer on the machine's other addresses.
func TestSecurityLoopbackOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, burstTeam(root))
	h := startHub(t, root)
	pid := h.cmd.Process.Pid
	// Let the panes start and a client connect, so that every kind of socket
	// the hub opens exists.
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, root+"/architect.jsonl")) > 0, "architect session line, have %v", len(readPrompts(t, root+"/architect.jsonl")))
	})
	dialAs(t, h, "builder", true)

	owned := socketInodes(t, pid)
	listening := 0
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, s := range procSockets(t, pid, table) {
			if !owned[s.inode] {
				continue
			}
			isTCP := strings.HasPrefix(table, "tcp")
			// TCP: state 0A is LISTEN. UDP: an unconnected socket (state 07,
			// no remote address) receives from anyone.
			if isTCP && s.state != "0A" || !isTCP && !(s.state == "07" && s.remote.IsUnspecified()) {
				continue
			}
			listening++
			t.Logf("hub listens on %s %s:%d", table, s.local, s.port)
			if !s.local.IsLoopback() {
				t.Errorf("hub socket %s %s:%d is not bound to loopback", table, s.local, s.port)
			}
			if isTCP && s.port != h.port {
				t.Errorf("hub listens on an unexpected port %d (hub port %d)", s.port, h.port)
			}
		}
	}
	if listening == 0 {
		t.Fatalf("no listening socket of pid %d found in /proc (inodes %v)", pid, owned)
	}

	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var probed []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		addr := net.JoinHostPort(ipn.IP.String(), strconv.Itoa(h.port))
		probed = append(probed, addr)
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("hub port answers on %s", addr)
		}
	}
	t.Logf("the hub port is closed on the other addresses %v", probed)
	h.stop()
}

// rawRequest sends one HTTP/1.1 request over a fresh loopback connection to
// the hub and returns the response status. With upgrade it is a WebSocket
// handshake. host and origin are sent as given ("" omits Origin).
func rawRequest(t *testing.T, port int, path, host, origin, token string, upgrade bool) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	if upgrade {
		key := make([]byte, 16)
		_, _ = rand.Read(key)
		fmt.Fprintf(&b, "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n", base64.StdEncoding.EncodeToString(key))
	}
	if origin != "" {
		fmt.Fprintf(&b, "Origin: %s\r\n", origin)
	}
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	b.WriteString("\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s (Host %s, Origin %q): %v", path, host, origin, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSecurityBrowserOriginRefused sends what a web page could make a
// browser send — a cross-origin request, or a DNS-rebound one whose Host is
// not loopback — to the WebSocket endpoint, the attach endpoint and /status,
// with the operator token so that only the origin and host checks can
// refuse them.
func TestSecurityBrowserOriginRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, burstTeam(root))
	h := startHub(t, root)
	tok := operator(t, root)
	loop := fmt.Sprintf("127.0.0.1:%d", h.port)
	evil := fmt.Sprintf("evil.example:%d", h.port)
	endpoints := []struct {
		path    string
		upgrade bool
		ok      int // the answer to a legitimate request
	}{
		{"/", true, http.StatusSwitchingProtocols},
		{"/attach/architect", true, http.StatusSwitchingProtocols},
		{"/status", false, http.StatusOK},
	}
	for _, ep := range endpoints {
		for _, tc := range []struct {
			name, host, origin string
			refused            bool
		}{
			{"legitimate", loop, "", false},
			{"localhost", fmt.Sprintf("localhost:%d", h.port), "", false},
			{"cross-origin", loop, "https://evil.example", true},
			{"null-origin", loop, "null", true},
			{"rebound-host-and-origin", evil, "http://" + evil, true},
			{"rebound-host", evil, "", true},
			{"rebound-host-no-port", "evil.example", "http://evil.example", true},
		} {
			t.Run(strings.Trim(ep.path, "/")+"/"+tc.name, func(t *testing.T) {
				code := rawRequest(t, h.port, ep.path, tc.host, tc.origin, tok, ep.upgrade)
				switch {
				case !tc.refused && code != ep.ok:
					t.Errorf("legitimate request answered %d, want %d", code, ep.ok)
				case tc.refused && (code == http.StatusSwitchingProtocols || code/100 == 2):
					t.Errorf("Host %s, Origin %q: answered %d, want a refusal", tc.host, tc.origin, code)
				}
			})
		}
	}
	h.stop()
}

// paneToken waits for the environment a pane's command dumped to path and
// returns its HM_TOKEN.
func paneToken(t *testing.T, path string) string {
	t.Helper()
	var tok string
	poll.For(t, 30*time.Second, func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("environment dump: %v", err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "HM_TOKEN="); ok && v != "" {
				tok = v
				return nil
			}
		}
		return fmt.Errorf("environment dump %s has no HM_TOKEN yet", filepath.Base(path))
	})
	return tok
}

// tokenTeam hosts architect and builder as fake agents that dump their
// environment first; background slots do the same.
func tokenTeam(root string) string {
	return fmt.Sprintf(`{"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","command":%q,"profile":"default"},
	 {"role":"oracle","transport":"ws"}],
	 "background":{"owner":"builder","max":3,"command":%q}}`,
		"env > "+root+"/architect.env; "+agentCommand(root, "architect"),
		"env > "+root+"/builder.env; "+agentCommand(root, "builder"),
		"env > "+root+"/$SQUIDRUN_ROLE.env; "+agentCommand(root, "bg"))
}

// register dials and registers with the given token; it returns the
// registered role or the error, and for a refusal checks that the hub
// closed the socket.
func register(t *testing.T, h *hubProc, role, token string) (string, error) {
	t.Helper()
	c := dial(t, h)
	ctx := tctx(t, 15*time.Second)
	r, err := c.Register(ctx, role, token, false)
	if err != nil {
		if _, _, rerr := c.Next(ctx); rerr == nil || ctx.Err() != nil {
			t.Errorf("register %s refused (%v) but the socket stayed open", role, err)
		}
		return "", err
	}
	return r.Role, nil
}

// TestSecurityTokens checks every role, background slots included, against
// missing, wrong and foreign tokens, and what a pane's own HM_TOKEN allows:
// its role only, over WebSocket, hm-send and attach, in its session only.
func TestSecurityTokens(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, tokenTeam(root))
	h := startHub(t, root)
	op := operator(t, root)
	archTok := paneToken(t, root+"/architect.env")
	builderTok := paneToken(t, root+"/builder.env")
	if r := run(t, root, nil, "hm-bg", "spawn", "1"); r.code != 0 {
		t.Fatalf("hm-bg spawn 1: %+v", r)
	}
	bgTok := paneToken(t, root+"/builder-bg-1.env")
	distinct := map[string]bool{archTok: true, builderTok: true, bgTok: true, op: true}
	if len(distinct) != 4 {
		t.Fatal("the operator's and the panes' tokens are not all distinct")
	}
	altered := []byte(op)
	altered[len(altered)-1] ^= 1 // one bit off

	tokens := []struct {
		name, token, owner string // owner: the only role the token is valid for ("" none, "*" all)
	}{
		{"missing", "", ""},
		{"garbage", "not-a-token", ""},
		{"operator-altered", string(altered), ""},
		{"operator-prefix", op[:32], ""},
		{"operator", op, "*"},
		{"architect-pane", archTok, "architect"},
		{"builder-pane", builderTok, "builder"},
		{"bg-slot-1", bgTok, "builder-bg-1"},
	}
	for _, role := range []string{"architect", "builder", "oracle", "builder-bg-1", "builder-bg-2", "builder-bg-3", "user"} {
		for _, tk := range tokens {
			t.Run(role+"/"+tk.name, func(t *testing.T) {
				got, err := register(t, h, role, tk.token)
				want := tk.owner == "*" || tk.owner == role
				switch {
				case want && err != nil:
					t.Errorf("refused: %v", err)
				case want && got != role:
					t.Errorf("registered as %q", got)
				case !want && err == nil:
					t.Errorf("accepted as %q", got)
				case !want && !errors.Is(err, proto.ErrUnauthorized):
					t.Errorf("refused with %v, want unauthorized", err)
				}
			})
		}
	}

	// A pane token acts as its own role only, whatever the header claims.
	c := dial(t, h)
	ctx := tctx(t, 30*time.Second)
	if _, err := c.Register(ctx, "architect", archTok, false); err != nil {
		t.Fatal(err)
	}
	if ack, _, err := c.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "from the architect pane"}); err != nil || !ack.OK || ack.Header != "ARCH" {
		t.Errorf("send with the architect's token: %+v %v", ack, err)
	}
	if ack, _, _ := c.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "(BUILDER #1): forged"}); ack.OK || ack.Status != string(status.CodeRoleMismatch) {
		t.Errorf("forged header with the architect's token: %+v", ack)
	}
	var resp proto.Response
	if err := c.Request(ctx, proto.Frame{Type: proto.TypeBackgroundAgent, Action: "list", RequestID: "r1"}, proto.TypeResponse, &resp); err != nil || resp.OK {
		t.Errorf("background control with the architect's token: %+v %v", resp, err)
	}
	// hm-send with HM_TOKEN.
	if r := run(t, root, []string{"HM_TOKEN=" + archTok, "SQUIDRUN_ROLE=architect"}, "hm-send", "oracle", "hello", "--no-fallback"); r.code != 0 {
		t.Errorf("hm-send with the architect's HM_TOKEN: %+v", r)
	}
	for _, role := range []string{"oracle", "builder", "builder-bg-1", "user"} {
		if r := run(t, root, []string{"HM_TOKEN=" + archTok, "SQUIDRUN_ROLE=" + role}, "hm-send", "oracle", "hello", "--no-fallback"); r.code != 1 || !strings.Contains(r.stderr, "unauthorized") {
			t.Errorf("hm-send as %s with the architect's HM_TOKEN: %+v", role, r)
		}
	}
	// Attach, /status and /reload.
	loop := fmt.Sprintf("127.0.0.1:%d", h.port)
	for _, tc := range []struct {
		path, token string
		upgrade     bool
		want        int
	}{
		{"/attach/architect?mode=view", archTok, true, http.StatusSwitchingProtocols},
		{"/attach/builder?mode=view", archTok, true, http.StatusUnauthorized},
		{"/attach/bg-2-1?mode=view", archTok, true, http.StatusUnauthorized},
		{"/attach/bg-2-1?mode=view", bgTok, true, http.StatusSwitchingProtocols},
		{"/attach/architect", "", true, http.StatusUnauthorized},
		{"/attach/architect", "not-a-token", true, http.StatusUnauthorized},
		{"/status", archTok, false, http.StatusUnauthorized},
		{"/status", bgTok, false, http.StatusUnauthorized},
		{"/status", "", false, http.StatusUnauthorized},
		{"/status", op, false, http.StatusOK},
		{"/reload", archTok, false, http.StatusUnauthorized}, // a pane may not reload the settings
		{"/reload", "", false, http.StatusUnauthorized},
		{"/reload", op, false, http.StatusMethodNotAllowed}, // POST only: the gate passed
	} {
		if code := rawRequest(t, h.port, tc.path, loop, "", tc.token, tc.upgrade); code != tc.want {
			t.Errorf("GET %s with token %.8q: %d, want %d", tc.path, tc.token, code, tc.want)
		}
	}

	// A slot's token dies with the slot.
	if r := run(t, root, nil, "hm-bg", "kill", "1"); r.code != 0 {
		t.Fatalf("hm-bg kill 1: %+v", r)
	}
	poll.For(t, 30*time.Second, func() error {
		_, err := register(t, h, "builder-bg-1", bgTok)
		return poll.Want(errors.Is(err, proto.ErrUnauthorized), "the ended slot's token refused")
	})

	// Pane tokens are valid for the current session only.
	h.stop()
	if err := os.Remove(root + "/architect.env"); err != nil {
		t.Fatal(err)
	}
	h2 := startHub(t, root)
	newTok := paneToken(t, root+"/architect.env")
	if newTok == archTok {
		t.Error("the architect's token did not change with the session")
	}
	if _, err := register(t, h2, "architect", archTok); !errors.Is(err, proto.ErrUnauthorized) {
		t.Errorf("the previous session's architect token: %v, want unauthorized", err)
	}
	if got, err := register(t, h2, "architect", newTok); err != nil || got != "architect" {
		t.Errorf("the new architect token: %q %v", got, err)
	}
	h2.stop()
}
