// Command memfloor is a memory floor for BenchmarkSixPanesMemory: the
// least any hub must hold in its process, and nothing else. Given a path,
// it opens an SQLite database there through the ledger's library (WAL, a
// table, one row written and read back); then it serves HTTP on a loopback
// port, prints "ready" and sleeps until it is killed. Its resident set is
// what a Go hub with SQLite's ledger costs before it hosts a single pane.
//
// Built with -tags nosqlite it links no SQLite and takes no path: Go's
// runtime and net/http alone.
//
// Usage: memfloor [database path]
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: memfloor [database path]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		closeDB, err := openDB(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "memfloor:", err)
			os.Exit(1)
		}
		defer closeDB()
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "memfloor:", err)
		os.Exit(1)
	}
}

// serve serves HTTP on a loopback port, asks it once, says ready and
// sleeps.
func serve() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(ln) //nolint:errcheck // serves until the process is killed
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Println("ready")
	select {}
}
