// Command hog keeps every core busy until it is stopped (SIGINT, SIGTERM or
// -for elapses), so that `make test-loaded` runs the suite on a machine as
// busy as a developer's laptop in the middle of a build.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", runtime.NumCPU(), "spinning goroutines (one per core by default)")
	d := flag.Duration("for", time.Hour, "stop after this long at the latest")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *d)
	defer cancel()
	fmt.Fprintf(os.Stderr, "hog: %d spinners, pid %d\n", *n, os.Getpid())
	var wg sync.WaitGroup
	for range *n {
		wg.Go(func() { spin(ctx) })
	}
	wg.Wait()
}

// spin burns CPU until ctx ends, looking at it every few million steps.
func spin(ctx context.Context) {
	x := uint64(1)
	for ctx.Err() == nil {
		for range 1 << 22 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		fmt.Fprintln(os.Stderr, "unreachable")
	}
}
