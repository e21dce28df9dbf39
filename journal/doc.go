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
// writer). A second goroutine asks the writer every Options.FTSInterval,
// while committed bodies wait (an idle ledger runs no timer), to index new
// bodies into the external-content FTS5 table comms_fts; indexing is never
// done inside Append, and a backlog is worked off in small chunks
// while the writer is idle. SQLite's auto-checkpoint is off on the writer:
// it checkpoints the WAL after 50ms without work, and under sustained load
// about every maxWALFrames frames (at most every 2,000 commits), restarting
// it before it grows past that (writer.boundWAL), so WAL copying does not
// stall a random Append.
//
// Options.ReadOnly opens an existing ledger for queries only (for CLI
// commands beside a running hub).
//
// # Hash chain
//
// Every comms_events row carries prev_hash and hash, where
//
//	hash = hex(HMAC-SHA256(ledger key, prev_hash || canonical change))
//
// prev_hash is the previous row's hash (GenesisHash, 64 "0" characters, for
// event_id 1) and event ids are consecutive from 1. The ledger key is
// KeySize random bytes kept outside the database (runtime/ledger-key, 64 hex
// characters, mode 0600; see LoadKey and EnsureKey). The canonical change
// is compact JSON with sorted keys:
//
//	{"at_ms":A,"change":{"obligation":O,"obligation_closed":X,"row":R,"signals":[S...],"signals_resolved":[N...]},
//	 "detail_json":D,"event":E,"event_id":I,"message_id":M}
//
// R is every comms_journal column of the message after the change but
// raw_body (covered through body_hash, which Verify recomputes); its
// changeable columns (status, ack_status, error_code, attempt,
// updated_at_ms) are also recorded in every event's detail_json, so Verify
// rebuilds R for each event from the current row and the detail. For a
// message's first event, S are the signals it wrote, N the ids of the
// signals it resolved and O the obligation it opened; for obligation_closed
// X is who closed it and when; elsewhere they are null or []. Integers are
// decimal; detail_json is a JSON string holding its stored text; strings
// are escaped as Go's encoding/json does with HTML escaping off.
//
// The kv row chain_head holds "<event_id>:<hash>:<signature>" of an event
// of the chain, signed with the key: the last event once the writer has
// been idle for a moment, a checkpoint was taken or the ledger closed, and
// at most 20 ms behind it under load (head.go). Events removed from the
// end of a stopped ledger are detected. Verify also checks every row against
// the chain, and every comms_signals and comms_obligations row (what the
// briefing and handoff read) against the events that wrote it.
//
// A ledger_key event (message_id "") starts a stretch hashed with one key:
// the cut-over of a ledger written by an older version (whose events used
// hex(sha256(prev_hash || AppendCanonicalEvent)), checked with that rule up
// to the cut-over), or a key that replaced a lost one (events made with the
// old key are then reported unverifiable). Checkpoint signs the chain head
// so a copy kept elsewhere proves a truncation (VerifyWith). See
// docs/ledger.md for the threat model.
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
