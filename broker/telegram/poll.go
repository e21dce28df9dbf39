// This file is the inbound side of the relay: the getUpdates loop, the
// handling of each update and the offset saved after it.

package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Run long-polls for updates until ctx is done, then returns nil. It returns
// nil at once for an off relay, and [ErrRunning] if already running. Errors
// never end it: failed requests and commits are retried with backoff, and a
// rejected token waits [Config.RejectedBackoff] between attempts, with the
// reason in [Relay.Status].
func (r *Relay) Run(ctx context.Context) error {
	if !r.Enabled() {
		return nil
	}
	if !r.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer r.running.Store(false)
	defer func() {
		r.mu.Lock()
		r.status.State = StateOff
		r.mu.Unlock()
		if r.transport != nil {
			r.transport.CloseIdleConnections()
		}
	}()
	offset, ok := r.loadOffset(ctx)
	if !ok {
		return nil
	}
	if !r.hello(ctx) {
		return nil
	}
	r.poll(ctx, offset)
	return nil
}

// loadOffset reads the saved offset, retrying while the store fails. It
// reports false when ctx ended first.
func (r *Relay) loadOffset(ctx context.Context) (int64, bool) {
	for failures := 1; ; failures++ {
		v, found, err := r.store.KVGet(ctx, r.offsetKey)
		if err == nil {
			var off int64
			if found && strings.TrimSpace(v) != "" {
				n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if perr != nil || n < 0 {
					r.log.Warn("ignoring unreadable telegram offset", "key", r.offsetKey, "value", v)
				} else {
					off = n
				}
			}
			r.mu.Lock()
			r.status.Offset = off
			r.mu.Unlock()
			return off, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		wait := r.backoff(failures)
		r.fail(fmt.Errorf("load telegram offset: %w", err), wait)
		if !sleepCtx(ctx, wait) {
			return 0, false
		}
	}
}

// hello calls getMe until it succeeds. It reports false when ctx ended first.
func (r *Relay) hello(ctx context.Context) bool {
	for failures := 1; ; failures++ {
		me, err := r.getMe(ctx)
		if err == nil {
			name := me.Username
			if name != "" {
				name = "@" + name
			} else {
				name = me.FirstName
			}
			r.mu.Lock()
			r.status.Bot = name
			r.status.State = StatePolling
			r.status.LastError = ""
			r.mu.Unlock()
			r.log.Info("telegram relay connected", "bot", name, "owner_chat", r.OwnerChat())
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		wait := r.pollWait(err, failures)
		r.fail(err, wait)
		if !sleepCtx(ctx, wait) {
			return false
		}
	}
}

// poll is the getUpdates loop. Each update is handled in order and the offset
// saved after it; a failed handling stops the batch, and the same update is
// fetched again after a backoff.
func (r *Relay) poll(ctx context.Context, offset int64) {
	failures := 0
	for ctx.Err() == nil {
		ups, err := r.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := r.pollWait(err, failures)
			r.fail(err, wait)
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		r.mu.Lock()
		r.status.State = StatePolling
		r.status.LastPollAt = r.now()
		r.status.LastError = ""
		r.mu.Unlock()
		ok := true
		for _, u := range ups {
			if u.ID < offset {
				continue // already committed; a server that ignores offset
			}
			if err := r.handle(ctx, u); err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				wait := r.backoff(failures)
				r.fail(err, wait)
				ok = false
				if !sleepCtx(ctx, wait) {
					return
				}
				break
			}
			offset = u.ID + 1
			r.saveOffset(ctx, offset)
		}
		if ok {
			failures = 0
		}
	}
}

// handle commits one update: delivered, refused, or skipped.
func (r *Relay) handle(ctx context.Context, u update) error {
	if u.Msg == nil {
		if u.Err != nil {
			r.log.Warn("skipping telegram update that does not decode", "update", u.ID, "kind", u.Kind, "err", u.Err)
		} else {
			r.log.Debug("skipping telegram update", "update", u.ID, "kind", u.Kind)
		}
		r.count(func(s *Status) { s.Skipped++ })
		return nil
	}
	in := toInbound(u)
	if !r.isAllowed(u.Msg.Chat) {
		if err := r.store.RecordRefused(ctx, in); err != nil {
			return fmt.Errorf("record refused telegram update %d: %w", u.ID, err)
		}
		r.log.Warn("refused telegram update from a chat that is not allowed",
			"update", u.ID, "chat", in.ChatID, "sender", in.Sender)
		r.count(func(s *Status) { s.Refused++ })
		return nil
	}
	if in.Text == "" {
		r.log.Debug("skipping telegram message without content", "update", u.ID, "chat", in.ChatID)
		r.count(func(s *Status) { s.Skipped++ })
		return nil
	}
	now := r.now()
	if err := r.deliver(ctx, in, formatInbound(in, now)); err != nil {
		return fmt.Errorf("deliver telegram update %d: %w", u.ID, err)
	}
	at := now
	if !in.Date.IsZero() && now.Sub(in.Date) > DelayedAfter {
		at = in.Date
	}
	r.mu.Lock()
	r.status.Inbound++
	r.lastChat = in.ChatID
	r.lastAt = at
	r.mu.Unlock()
	r.log.Info("telegram message delivered", "update", u.ID, "chat", in.ChatID, "sender", in.Sender)
	return nil
}

// isAllowed reports whether a chat may reach the architect.
func (r *Relay) isAllowed(c wireChat) bool {
	if r.allowed[chatIDString(c)] {
		return true
	}
	return c.Username != "" && r.allowed["@"+strings.ToLower(c.Username)]
}

// saveOffset persists the offset. The update is already committed, so a
// cancelled ctx must not stop the save, and a failed save only means that
// update may be offered once more after a restart (the hub dedupes it).
func (r *Relay) saveOffset(ctx context.Context, offset int64) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RequestTimeout)
	defer cancel()
	r.mu.Lock()
	r.status.Offset = offset
	r.mu.Unlock()
	if err := r.store.KVSet(sctx, r.offsetKey, strconv.FormatInt(offset, 10)); err != nil {
		r.log.Warn("save telegram offset", "offset", offset, "err", err)
		r.mu.Lock()
		r.status.LastError = "save offset: " + err.Error()
		r.status.LastErrorAt = r.now()
		r.mu.Unlock()
	}
}
