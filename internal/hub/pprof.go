package hub

import (
	"net/http"
	"net/http/pprof"
)

// pprofHandler serves net/http/pprof's handlers under /debug/pprof/ when
// profiling is on (hm up --pprof or settings.json "pprof": true), on a mux
// of their own (never http.DefaultServeMux), to the operator only: the
// same gate as /status (operatorOnly). Off, every path under
// /debug/pprof/ is 404, as if it were not there.
func (h *Hub) pprofHandler() http.Handler {
	if !h.opts.Pprof && !h.Team().Pprof {
		return http.NotFoundHandler()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // the index and the named profiles (heap, goroutine, ...)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return h.operatorOnly(mux)
}
