// Package natstest runs an embedded nats-server with JetStream for tests:
// loopback, a random port, a store in the test's temp dir. Only tests
// import it, so nats-server never links into an hm binary.
package natstest

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server that can be stopped and started again
// on the same port and store.
type Server struct {
	t    testing.TB
	opts server.Options

	mu sync.Mutex
	s  *server.Server
}

// Start runs a server until t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	srv := &Server{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true,
	}}
	srv.Restart()
	srv.opts.Port = srv.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(srv.Stop)
	return srv
}

// URL is the client URL (the same across restarts).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s.ClientURL()
}

// Stop shuts the server down (a no-op when it is down).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s != nil && s.s.Running() {
		s.s.Shutdown()
		s.s.WaitForShutdown()
	}
}

// Restart starts the server (again), with the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	opts := s.opts
	ns, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		s.t.Fatal("nats-server did not start")
	}
	s.s = ns
}
