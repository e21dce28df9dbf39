// Package jsbench only holds benchmarks that measure NATS JetStream, run
// embedded in the benchmark binary, the way the broker's #18 benchmarks
// measure hm (broker/speed_bench_test.go), so that scripts/bench prints
// both in one run. nats-server and nats.go are test-only dependencies: they
// are imported from this package's _test.go files alone, and no hm binary
// links them.
package jsbench
