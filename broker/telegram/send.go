package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"hm/internal/ground/msgid"
	"hm/roles"
)

// finishTimeout bounds recording a part's outcome after its send ended; it
// runs even when the caller's ctx was cancelled, since the send happened.
const finishTimeout = 10 * time.Second

// Send relays body to a Telegram chat (chatID, or [Relay.OwnerChat] when
// empty). A leading role header "(ROLE #N): " is stripped. The rest is split
// with [Split] into parts of at most [MaxPartLen] UTF-16 code units, sent in
// order, one at a time per relay (parts of concurrent sends never
// interleave). For each part Send calls Store.RecordPart, sends it, then
// Store.FinishPart with the outcome. HTTP 429 waits retry_after; 5xx, network
// errors and timeouts retry with backoff; both are bounded by
// [Config.MaxRetries]. Other 4xx answers fail the part at once. Send stops at
// the first part that fails or cannot be recorded and returns an error
// (wrapping [ErrDeliveryFailed] when Telegram did not take the part, or the
// store's error). Off relay or no chat: [ErrUnconfigured].
func (r *Relay) Send(ctx context.Context, parentID, chatID, senderRole, body string) error {
	if !r.Enabled() {
		return ErrUnconfigured
	}
	if chatID = strings.TrimSpace(chatID); chatID == "" {
		chatID = r.OwnerChat()
	}
	if chatID == "" {
		return fmt.Errorf("%w: no chat id configured (TELEGRAM_CHAT_ID)", ErrUnconfigured)
	}
	if parentID == "" {
		parentID = msgid.TelegramOut(time.Now())
	}
	if _, rest, ok := roles.ParseHeader(body); ok {
		body = rest
	}
	parts := Split(cleanOutbound(body), MaxPartLen)
	if len(parts) == 0 {
		return ErrEmptyBody
	}
	select {
	case r.sendSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("telegram send %s: %w", parentID, ctx.Err())
	}
	defer func() { <-r.sendSem }()

	var finishErr error
	for i, text := range parts {
		p := Part{
			ID:         msgid.TelegramPart(parentID, i+1),
			ParentID:   parentID,
			ChatID:     chatID,
			SenderRole: senderRole,
			Text:       text,
			Index:      i + 1,
			Total:      len(parts),
		}
		if err := r.store.RecordPart(ctx, p); err != nil {
			if errors.Is(err, ErrPartDelivered) {
				continue
			}
			return fmt.Errorf("telegram send %s: record part %d/%d: %w", parentID, p.Index, p.Total, err)
		}
		sendErr := r.sendPart(ctx, chatID, text)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		if sendErr != nil {
			reason := r.redact(sendErr).Error()
			ferr := r.store.FinishPart(fctx, p.ID, false, reason)
			cancel()
			r.mu.Lock()
			r.status.OutboundFailed++
			r.status.LastSendError = p.ID + ": " + reason
			r.mu.Unlock()
			r.log.Warn("telegram part failed", "part", p.ID, "chat", chatID, "reason", reason)
			err := fmt.Errorf("telegram send %s: part %d/%d: %w", parentID, p.Index, p.Total, sendErr)
			if ferr != nil {
				err = errors.Join(err, fmt.Errorf("record failure of %s: %w", p.ID, ferr))
			}
			return err
		}
		ferr := r.store.FinishPart(fctx, p.ID, true, "")
		cancel()
		r.count(func(s *Status) { s.Outbound++ })
		r.log.Debug("telegram part delivered", "part", p.ID, "chat", chatID)
		if ferr != nil {
			// Delivered, but the ledger does not know yet; carry on so the
			// chat gets the whole message, and report it.
			r.log.Warn("record telegram delivery", "part", p.ID, "err", ferr)
			finishErr = errors.Join(finishErr, fmt.Errorf("record delivery of %s: %w", p.ID, ferr))
		}
	}
	if finishErr != nil {
		return fmt.Errorf("telegram send %s: %w", parentID, finishErr)
	}
	return nil
}

// sendPart sends one part, retrying as Send documents.
func (r *Relay) sendPart(ctx context.Context, chatID, text string) error {
	params := &bot.SendMessageParams{
		ChatID:             chatArg(chatID),
		Text:               text,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	for attempt := 1; ; attempt++ {
		sc := &statusCapture{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, statusKey{}, sc), r.cfg.RequestTimeout)
		_, err := r.api.SendMessage(actx, params)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sendMessage interrupted: %w", ctx.Err())
		}
		ae := r.libraryError("sendMessage", sc, err)
		wait, retry := r.sendWait(ae, attempt)
		if !retry {
			return fmt.Errorf("%w: %w", ErrDeliveryFailed, ae)
		}
		if attempt > r.cfg.MaxRetries {
			return fmt.Errorf("%w: gave up after %d attempts: %w", ErrDeliveryFailed, attempt, ae)
		}
		r.log.Info("telegram send retry", "attempt", attempt, "wait", wait, "err", ae)
		if !sleepCtx(ctx, wait) {
			return fmt.Errorf("sendMessage interrupted: %w (last error: %w)", ctx.Err(), ae)
		}
	}
}

// sendWait decides whether a failed attempt is retried, and after how long.
func (r *Relay) sendWait(e *apiError, attempt int) (time.Duration, bool) {
	switch {
	case e.Status == http.StatusTooManyRequests:
		if e.RetryAfter <= 0 {
			return r.backoff(attempt), true
		}
		d := time.Duration(e.RetryAfter) * time.Second
		return d, d <= r.cfg.MaxRetryAfter
	case e.Status >= 400 && e.Status < 500:
		return 0, false
	default: // 5xx, no answer, timeout, or an answer that did not decode
		return r.backoff(attempt), true
	}
}

// chatArg passes numeric chat ids as numbers and "@names" as strings.
func chatArg(chatID string) any {
	if n, err := strconv.ParseInt(chatID, 10, 64); err == nil {
		return n
	}
	return chatID
}

// cleanOutbound makes a body acceptable to sendMessage: valid UTF-8 and no
// NUL bytes.
func cleanOutbound(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
