// Package telegram is hm's relay to the human over the Telegram Bot API
// (SPEC §11 and the `user` and `telegram` targets of §3).
//
// # Inbound
//
// The relay long-polls getUpdates itself instead of using the polling loop of
// github.com/go-telegram/bot. That loop advances its offset in memory as soon
// as an update is fetched, before any handler has run, and confirms it to
// Telegram on the next request; an update whose ledger commit failed could
// then never be fetched again. Here every update is handled in order and the
// offset (update_id+1) is persisted through [Store.KVSet] only after
// [DeliverFunc] (or [Store.RecordRefused]) returned nil, i.e. after the ledger
// row exists. If the commit fails the relay backs off and asks for the same
// update again. The offset is kept per bot (key "telegram.offset.<bot id>")
// so a new token never inherits an offset that would skip its updates. A
// crash between the commit and the offset save replays that one update; the
// hub dedupes it by its message id "telegram-in-<update_id>".
//
// Updates are decoded with small local types in which every media object is
// kept raw, so an unexpected shape of a field the relay does not need never
// makes a text undecodable. Only the owner chat ([Config.ChatID]) and the
// allowlisted chats get in; other chats are recorded through
// [Store.RecordRefused] and never delivered. Texts, captions and placeholders
// for media ("[Photo] caption", "[File: name] caption", "[Voice]", ...) are
// delivered as "[Telegram from <sender>]: <text>". Edited messages are
// delivered again, marked "[edited] ". Bot commands such as /start are plain
// text. Updates without content (service messages, reactions, unknown kinds)
// only advance the offset. Invalid UTF-8 and control characters are removed.
// Messages older than ten minutes get a "[delayed: Nm old] " prefix.
//
// # Outbound
//
// [Relay.Send] uses the library's sendMessage. It strips the role header,
// splits the body with [Split] into parts of at most [MaxPartLen] UTF-16 code
// units (Telegram's limit is 4096), records each part as its own ledger row
// before sending it, and finishes that row as delivered or failed. HTTP 429
// waits retry_after, 5xx and network errors retry with exponential backoff,
// both bounded by [Config.MaxRetries]; other 4xx answers fail at once with the
// API's description as the reason.
//
// # Rejected tokens
//
// A token the API rejects (401 or 404 from getMe or getUpdates) puts the relay
// in state "error" with a clear message and makes it retry only after
// [Config.RejectedBackoff] (default five minutes): no crash loop, no tight
// loop.
package telegram
