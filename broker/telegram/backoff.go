// This file is the relay's failure handling: status and log of an error, the
// wait before the next attempt, and the token's removal from error text.

package telegram

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// fail records err in the status and logs it with the coming wait.
func (r *Relay) fail(err error, wait time.Duration) {
	msg := r.redact(err).Error()
	var ae *apiError
	rejected := errors.As(err, &ae) && ae.rejected()
	switch {
	case rejected:
		msg = "token rejected by the Telegram Bot API (" + msg + "); check TELEGRAM_BOT_TOKEN"
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		msg += "; another process is polling this bot, or a webhook is set"
	}
	r.mu.Lock()
	r.status.State = StateError
	r.status.LastError = msg
	r.status.LastErrorAt = r.now()
	r.mu.Unlock()
	if rejected {
		r.log.Error("telegram relay paused", "err", msg, "retry_in", wait)
		return
	}
	r.log.Warn("telegram relay error", "err", msg, "retry_in", wait)
}

// pollWait is the wait after a failed getMe or getUpdates.
func (r *Relay) pollWait(err error, failures int) time.Duration {
	var ae *apiError
	if errors.As(err, &ae) {
		switch {
		case ae.rejected():
			return r.cfg.RejectedBackoff
		case ae.Status == http.StatusTooManyRequests && ae.RetryAfter > 0:
			return time.Duration(ae.RetryAfter) * time.Second
		}
	}
	return r.backoff(failures)
}

// backoff is the wait after the n-th consecutive failure (n >= 1): Backoff
// doubling up to MaxBackoff, plus up to 10% jitter.
func (r *Relay) backoff(n int) time.Duration {
	d := r.cfg.Backoff
	for i := 1; i < n && d < r.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.cfg.MaxBackoff)
	if j := int64(d / 10); j > 0 {
		d += time.Duration(rand.Int64N(j))
	}
	return d
}

// redact removes the bot token from err's text.
func (r *Relay) redact(err error) error {
	if err == nil || r.cfg.Token == "" || !strings.Contains(err.Error(), r.cfg.Token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), r.cfg.Token, "<token>"), err: err}
}

// redactedError is an error whose text had the bot token removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// sleepCtx waits d or until ctx is done; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
