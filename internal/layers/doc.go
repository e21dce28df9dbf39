// Package layers holds no code, only tests that hold the documents to the
// code: which hm packages may depend on which, checked with go list -deps
// (layers_test.go), and that every Go name docs/architecture.md,
// docs/glossary.md and docs/design.md mention is declared, in the file
// they say (walkthrough_test.go).
//
// From the ground up: the vocabulary packages (internal/ground/status, msgid,
// atomicfile, periodic, layout, poll, promptlog, testutil) depend on no
// other hm package; roles depends only on them; agent, journal and broker
// sit beside each other (broker records in journal, but neither imports
// agent, and journal imports no broker); internal/hub and internal/cli,
// the top of the program, wire them together. hm-send (cmd/hm-send over
// internal/sendcmd and internal/cmdline) stands apart from the top: it
// links no hub, SQLite, NATS, Telegram or MCP code.
package layers
