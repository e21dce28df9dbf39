// Package report builds the two markdown documents hm derives from the
// evidence ledger (SPEC §10): the startup briefing (handoffs/briefing.md),
// built when a session starts, and the session handoff
// (handoffs/session.md), rewritten while a session runs and at shutdown.
//
// Both documents are read by agents and humans alike, so they are plain
// markdown: a title, "## " sections, bullet lists for scalar facts and
// tables for rows. Every table cell goes through Cell, which collapses
// whitespace, drops control characters, cuts at CellMaxRunes runes and
// escapes '|', so a message body can never break a table.
//
// The handoff is deterministic: it never reads the clock, renders times from
// the ledger's own millisecond values in UTC and orders rows by their ids, so
// the same ledger (and the same Options) always gives byte-identical output
// and WriteHandoff can skip unchanged rewrites. The briefing uses
// Options.Now for its date and for ages.
//
// Every query is bounded (LIMIT, or a session or row-id range served by an
// index), so both documents stay fast on ledgers with millions of rows; all
// queries of one document run in a single read transaction and therefore
// see one consistent snapshot.
package report
