// Package layers holds no code, only tests that hold the documents to the
// code: that no import runs up the folders (folders_test.go), which hm
// packages may depend on which beyond that, checked with go list -deps
// (layers_test.go), and that every Go name docs/architecture.md,
// docs/glossary.md and docs/design.md mention is declared, in the file
// they say (walkthrough_test.go).
//
// From the ground up: the vocabulary in internal/ground (status, msgid,
// atomicfile, periodic, layout, paneevents, buildinfo, and the test
// helpers poll, promptlog, testutil, benchutil) depends on no other hm
// package; roles depends only on it; agent and journal sit beside each
// other (neither imports the other); broker records in journal, and
// triggers takes only broker/proto from broker; the rest of internal/ —
// the wings (client, cockpit, mcpserver, federation, …) and internal/hub
// and internal/cli, the top of the program — wires them together, and
// cmd/ holds the binaries. hm-send (cmd/hm-send over internal/sendcmd and
// internal/cmdline) stands apart from the top: it links no hub, SQLite,
// NATS, Telegram or MCP code, nor net/http (internal/client speaks
// WebSocket over TCP itself).
package layers
