package hub

import (
	"context"
	"os/exec"
	"runtime"

	"hm/internal/notify"
)

// newNotifier makes the hub's notifier (internal/notify) with the sinks
// settings.json "notifications" and hm up's terminal allow: a desktop
// notifier command, the hub's terminal, the Telegram line of a waiting
// pane.
func (h *Hub) newNotifier() *notify.Notifier {
	cfg := h.Team().Notifications
	log := h.log.With("component", "notify")
	var sinks []notify.Sink
	switch {
	case !cfg.DesktopOn():
	case cfg.Command != "":
		sinks = append(sinks, notify.DesktopCommand(cfg.Command))
	case h.opts.DetectDesktop:
		if d, ok := notify.DetectDesktop(runtime.GOOS, exec.LookPath); ok {
			sinks = append(sinks, d)
		} else {
			log.Info("no desktop notifier found (notify-send, osascript); settings.json \"notifications\": {\"command\"} names one")
		}
	}
	if h.opts.Terminal != nil && cfg.TerminalOn() {
		sinks = append(sinks, h.opts.Terminal)
	}
	if h.relay != nil {
		sinks = append(sinks, notify.SinkFunc{Label: "telegram", Func: func(ctx context.Context, ev notify.Event) error {
			if ev.Kind != notify.KindWaiting {
				return nil // messages to user reach Telegram by SPEC §3's rule
			}
			return h.tellWaiting(ctx, ev)
		}})
	}
	return notify.New(notify.Config{Logger: log, Store: h.Ledger, Sinks: sinks})
}
