// Package journal is hm's evidence ledger (SPEC §9 and the storage side of
// §10): an SQLite database recording every message, its state changes as a
// tamper-evident hash chain, tagged signals, obligations, a full-text index
// and a small key/value store.
//
// # Concurrency
//
// One goroutine owns the only write connection and group-commits: it takes
// the queued operations (Append, Advance, KVSet, ...) into one IMMEDIATE
// transaction, commits once, then answers every waiter. If a batch cannot
// commit, its operations are retried one by one so one bad operation cannot
// fail unrelated ones. Failures to commit wrap ErrUnavailable. Reads use a
// small pool of query_only connections (WAL lets them run beside the
// writer). A second goroutine asks the writer every Options.FTSInterval to
// index new bodies into the external-content FTS5 table comms_fts; indexing
// is never done inside Append, and a backlog is worked off in small chunks
// while the writer is idle. SQLite's auto-checkpoint is off on the writer:
// it checkpoints the WAL after 50ms without work (or every 500 commits under
// sustained load), so WAL copying does not stall a random Append.
//
// Options.ReadOnly opens an existing ledger for queries only (for CLI
// commands beside a running hub).
//
// # Hash chain
//
// Every comms_events row carries prev_hash and hash, where
//
//	hash = hex(sha256(prev_hash || canonical))
//
// prev_hash is the previous row's hash (GenesisHash, 64 "0" characters, for
// event_id 1), event ids are consecutive from 1, and canonical is the row's
// fields as compact JSON with sorted keys:
//
//	{"at_ms":1700000000000,"detail_json":"{\"status\":\"routed\"}","event":"routed","event_id":17,"message_id":"hm-1"}
//
// Integers are written in decimal; detail_json is included as a JSON string
// holding its stored text (not re-encoded); strings are escaped as Go's
// encoding/json does with HTML escaping off (invalid UTF-8 becomes U+FFFD,
// U+2028 and U+2029 are escaped). The kv row chain_head holds
// "<last event_id>:<last hash>", updated in the same transaction, so
// removing events from the end is detected too. Each message's "brokered"
// event records the sha256 of its raw_body (detail key body_hash); Verify
// recomputes the chain and every body hash.
//
// # Statuses
//
// Status only rises: recorded < brokered < failed < routed < acked, and
// ack_status only rises: "" < accepted.unverified < delivered.websocket <
// delivered.verified (see Merge).
//
// # Running counts
//
// comms_session_counts holds, per session, status, channel and sender, how
// many messages there are and the highest seq; the writer updates it in the
// transaction of every Append and status change, so reports read a
// session's counts without counting its rows. Verify recounts it.
package journal
