package hub

import (
	"context"
	"net/http"
	"sync"

	"hm/broker"
)

// startExtras starts the optional components and fills deps with them.
func (h *Hub) startExtras(ctx context.Context, deps *broker.Deps) error { return nil }

// mountExtras adds the components' HTTP endpoints (attach).
func (h *Hub) mountExtras(mux *http.ServeMux) {}

// runExtras starts the components' loops under ctx, tracked by wg.
func (h *Hub) runExtras(ctx context.Context, wg *sync.WaitGroup) {}

// stopExtras stops components in reverse order.
func (h *Hub) stopExtras(ctx context.Context) {
	for i := len(h.extras) - 1; i >= 0; i-- {
		h.extras[i].stop(ctx)
	}
}

func (h *Hub) finalHandoff(ctx context.Context) {}
