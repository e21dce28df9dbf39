// Package layers holds no code: its test states which hm packages may
// depend on which, and checks it with go list -deps (layers_test.go).
//
// From the ground up: the vocabulary packages (internal/status, msgid,
// atomicfile, periodic, layout, poll, promptlog, testutil) depend on no
// other hm package; roles depends only on them; agent, journal and broker
// sit beside each other (broker records in journal, but neither imports
// agent, and journal imports no broker); internal/hub and internal/cli,
// the top of the program, wire them together.
package layers
