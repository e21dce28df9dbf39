package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hm/internal/ground/periodic"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrRefused is wrapped by a Handler's error when the message must never
// be delivered (a forged sender, a target this hub does not host): it is
// terminated (never redelivered) and logged.
var ErrRefused = errors.New("federation: message refused")

// ErrRetry is wrapped by a Handler's error when the message cannot be
// taken yet and is expected to be later (e.g. its hub's presence is not
// seen yet): it is redelivered, without a warning.
var ErrRetry = errors.New("federation: not yet")

// Handler takes one message for a role this hub hosts. It returns nil once
// the hub's ledger shows the message typed (or otherwise settled): the
// message is then double-acked. progress extends the AckWait while it
// waits. Another error leaves it to be redelivered.
type Handler func(ctx context.Context, e Envelope, progress func()) error

// ConsumerName is role's durable consumer.
func ConsumerName(role string) string { return "hm-to-" + role }

// Consume runs role's durable pull consumer until ctx ends: explicit acks,
// one message unacknowledged at a time (the pane's order), AckWait
// Config.AckWait. It retries its setup and fetches while NATS is away.
func (c *Client) Consume(ctx context.Context, role string, h Handler) {
	log := c.log.With("consumer", ConsumerName(role))
	backoff := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(c.cfg.ReconnectWait):
			return true
		}
	}
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil {
			var err error
			cons, err = c.consumer(ctx, role)
			if err != nil {
				log.Debug("consumer setup", "err", err)
				if !backoff() {
					return
				}
				continue
			}
		}
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			log.Debug("fetch", "err", err)
			if !backoff() {
				return
			}
			cons = nil // set it up again: the server may have lost it
			continue
		}
		for m := range batch.Messages() {
			c.handle(ctx, m, h)
		}
		cancel()
		if err := batch.Error(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) {
			log.Debug("fetch", "err", err)
			if !backoff() {
				return
			}
		}
	}
}

func (c *Client) consumer(ctx context.Context, role string) (jetstream.Consumer, error) {
	if err := c.EnsureStream(ctx); err != nil {
		return nil, err
	}
	cons, err := c.js.CreateOrUpdateConsumer(ctx, c.subj.Stream(), jetstream.ConsumerConfig{
		Durable: ConsumerName(role), FilterSubject: c.subj.To(role),
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1, AckWait: c.cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("federation: consumer %s: %w", ConsumerName(role), err)
	}
	// Only this hub consumes role, and it handles one message at a time
	// (Consume sets the consumer up again only between messages): a message
	// still unacknowledged here was taken by a previous process of this
	// hub that died holding it (kill -9), or its ack was lost. Without a
	// reset, MaxAckPending 1 would hold every later message back for the
	// whole AckWait (5 minutes); reset to the ack floor, it is redelivered
	// now, and the ledger keeps it from being typed twice.
	if info := cons.CachedInfo(); info != nil && info.NumAckPending > 0 {
		if _, err := c.js.ResetConsumer(ctx, c.subj.Stream(), ConsumerName(role)); err != nil {
			return nil, fmt.Errorf("federation: reset consumer %s: %w", ConsumerName(role), err)
		}
		c.log.Info("consumer reset to its ack floor: a message was left unacknowledged", "consumer", ConsumerName(role), "ackPending", info.NumAckPending)
	}
	return cons, nil
}

// handle runs h on one message and settles it with JetStream.
func (c *Client) handle(ctx context.Context, m jetstream.Msg, h Handler) {
	e, err := ParseEnvelope(m.Data())
	if err != nil {
		c.log.Warn("refused a federated message", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	progress := func() { _ = m.InProgress() }
	// While h works (a pane may take long to be ready), the AckWait is
	// extended every third of it.
	hctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Run(hctx, c.cfg.AckWait/3, progress)
	}()
	err = h(ctx, e, progress)
	stop()
	<-done
	switch {
	case err == nil:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.PublishTimeout)
		defer cancel()
		if aerr := m.DoubleAck(actx); aerr != nil {
			// Redelivered later: the ledger has it, so it is acked then
			// without being typed again.
			c.log.Debug("double ack", "messageId", e.MessageID, "err", aerr)
		}
	case errors.Is(err, ErrRefused):
		c.log.Warn("refused a federated message", "messageId", e.MessageID, "hub", e.Hub, "from", e.From, "err", err)
		_ = m.Term()
	default:
		if ctx.Err() == nil && !errors.Is(err, ErrRetry) {
			c.log.Warn("federated message not taken; redelivered later", "messageId", e.MessageID, "err", err)
		}
		_ = m.NakWithDelay(c.cfg.ReconnectWait)
	}
}
