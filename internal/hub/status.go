package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/broker/telegram"
	"hm/internal/ground/status"
	"hm/internal/notify"
	"hm/journal/report"
)

// PaneStatus is one pane in Status.
type PaneStatus struct {
	Role           string `json:"role"`
	PaneID         string `json:"paneId"`
	Header         string `json:"header"`
	Command        string `json:"command"`
	Profile        string `json:"profile"`
	PID            int    `json:"pid"`
	State          string `json:"state"`
	Queued         int    `json:"queued"`
	LastActivityMs int64  `json:"lastActivityMs"`
	Restarts       int    `json:"restarts"`
	// Resumes counts the restarts that resumed the CLI's session
	// (agent.Status.Resumes).
	Resumes int `json:"resumes"`
	// Origin is how the pane's current program came to be: started,
	// adopted, restarted or resumed (agent.Origin); OriginWords says it
	// with the restarts, as hm status, the cockpit and the handoff show
	// it (agent.Status.OriginWords).
	Origin      agent.Origin `json:"origin"`
	OriginWords string       `json:"originWords"`
	// Adopted: the pane's first program was not started by this hub but
	// adopted from the keeper of a hub that died (agent.Status.Adopted).
	Adopted        bool   `json:"adopted,omitempty"`
	LastError      string `json:"lastError,omitempty"`
	BracketedPaste bool   `json:"bracketedPaste"`
	// Cols and Rows are the pane's terminal size (agent.Status): the
	// cockpit sizes a read-only view to it.
	Cols int `json:"cols"`
	Rows int `json:"rows"`
	// Waiting says why messages wait for someone rather than for the
	// program, e.g. "waiting for the person in attach" (agent.Status.Waiting).
	Waiting string `json:"waiting,omitempty"`
	// Readiness is how the profile's markers read the pane's screen:
	// "ready", "busy: <marker>", "blocked: <dialog marker>", "not ready"
	// (agent.Status.Readiness).
	Readiness string `json:"readiness"`
	// Drift, when set, warns that the pane was typed into on the unmarked
	// wait: its profile's markers may no longer match its CLI's screen
	// (agent.Drift).
	Drift *DriftStatus `json:"drift,omitempty"`
}

// DriftStatus is a pane's profile drift in Status (agent.Drift).
type DriftStatus struct {
	// Warning is the drift in one line, as hm status, hm doctor and the
	// cockpit show it.
	Warning string `json:"warning"`
	AtMs    int64  `json:"atMs"`
	Command string `json:"command"`
	// Version is the CLI's --version, where cheap to ask ("" otherwise).
	Version string   `json:"version,omitempty"`
	Rows    []string `json:"rows"`
}

// driftStatus is d in Status, nil for none.
func driftStatus(d *agent.Drift) *DriftStatus {
	if d == nil {
		return nil
	}
	return &DriftStatus{Warning: d.Warning(), AtMs: d.At.UnixMilli(), Command: d.Command, Version: d.Version, Rows: d.Rows}
}

// Status is what `hm status --json` prints (served at /status).
type Status struct {
	Hub struct {
		PID       int    `json:"pid"`
		Port      int    `json:"port"`
		URL       string `json:"url"`
		Root      string `json:"root"`
		Session   int    `json:"session"`
		SessionID string `json:"sessionId"`
		StartedAt string `json:"startedAt"`
		UptimeMs  int64  `json:"uptimeMs"`
		Version   string `json:"version"`
		// PaneProtocol is the protocol by which this hub's panes pass to
		// another hub (agent.PaneProtocol; hm restart checks it first).
		PaneProtocol string `json:"paneProtocol"`
	} `json:"hub"`
	Panes     []PaneStatus    `json:"panes"`
	Slots     []proto.BgAgent `json:"slots"`
	Listeners []string        `json:"listeners"`
	Clients   int             `json:"clients"`
	Triggers  any             `json:"triggers,omitempty"`
	Telegram  telegramStatus  `json:"telegram"`
	Ledger    LedgerStatus    `json:"ledger"`
	// Stuck lists the session's newest messages stuck at a pane (at most
	// report.StuckListLimit; StuckMore says there are more).
	Stuck     []StuckStatus `json:"stuck"`
	StuckMore bool          `json:"stuckMore,omitempty"`
	// Obligations lists the open obligations, oldest first: this
	// session's and the previous session's (report.OpenObligations, the
	// rule the cockpit and the briefing share), at most
	// report.ObligationListLimit; ObligationsMore says there are more.
	Obligations     []ObligationStatus `json:"obligations"`
	ObligationsMore bool               `json:"obligationsMore,omitempty"`
	// Notifications are the latest events told to the person, oldest
	// first (internal/notify; the cockpit's unread count and browser
	// notifications).
	Notifications []notify.Event `json:"notifications"`
	// Federation is set when the hub is federated (hm up --nats): its NATS
	// identity and the panes other hubs host.
	Federation *FederationStatus `json:"federation,omitempty"`
}

// ObligationStatus is an open obligation in Status with how far its
// [ACK REQUIRED] message got: Stage is the protocol's stage name (as
// --json shows it), Delivery the plain words (journal.Message.Delivery)
// and ToVerify what would take it to "seen by the agent" (""
// once there); all empty when its row cannot be read.
type ObligationStatus struct {
	proto.ObligationView
	Stage    status.Stage `json:"stage,omitempty"`
	Delivery string       `json:"delivery,omitempty"`
	ToVerify string       `json:"toVerify,omitempty"`
}

// StuckStatus is a message stuck at a pane, in Status.
type StuckStatus struct {
	MessageID string `json:"messageId"`
	From      string `json:"from"`
	To        string `json:"to"`
	Header    string `json:"header,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
	AtMs      int64  `json:"atMs"`
	Reason    string `json:"reason"`
}

// LedgerStatus is the evidence ledger's health in Status: Error is set
// when it can no longer commit (e.g. its file was deleted or replaced).
type LedgerStatus struct {
	Path  string `json:"path"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

type telegramStatus struct {
	State      string `json:"state"`
	LastError  string `json:"lastError,omitempty"`
	LastPollMs int64  `json:"lastPollMs,omitempty"`
	Inbound    int64  `json:"inbound"`
	Outbound   int64  `json:"outbound"`
	Refused    int64  `json:"refused"`
}

// Snapshot gathers the hub's status.
func (h *Hub) Snapshot(ctx context.Context) Status {
	var s Status
	s.Hub.PID, s.Hub.Port, s.Hub.URL, s.Hub.Root = os.Getpid(), h.Port, h.URL(), h.Layout.Root
	s.Hub.Session, s.Hub.SessionID, s.Hub.Version = h.Session, h.SessionID(), Version
	s.Hub.PaneProtocol = agent.PaneProtocol()
	s.Hub.StartedAt = h.Started.UTC().Format(time.RFC3339)
	s.Hub.UptimeMs = time.Since(h.Started).Milliseconds()
	s.Panes = []PaneStatus{}
	if h.panes != nil {
		for _, p := range h.panes.statuses() {
			if strings.Contains(p.Role, "-bg-") {
				continue
			}
			s.Panes = append(s.Panes, PaneStatus{Role: p.Role, PaneID: p.PaneID, Header: p.Header, Command: p.Command, Profile: p.Profile,
				PID: p.PID, State: string(p.State), Queued: p.Queued, LastActivityMs: p.LastActivity.UnixMilli(), Restarts: p.Restarts,
				Resumes: p.Resumes, Origin: p.Origin, OriginWords: p.OriginWords(),
				Adopted: p.Adopted, LastError: p.LastError, BracketedPaste: p.BracketedPaste, Cols: p.Cols, Rows: p.Rows, Waiting: p.Waiting, Readiness: p.Readiness,
				Drift: driftStatus(p.Drift)})
		}
	}
	s.Slots = []proto.BgAgent{}
	if h.slots != nil {
		s.Slots = h.slots.List()
		for i, sl := range s.Slots {
			if p, ok := h.slots.Lookup(sl.Alias); ok {
				s.Slots[i].State = string(p.Status().State)
			}
		}
	}
	s.Listeners = h.Broker.ListenerRoles()
	if s.Listeners == nil {
		s.Listeners = []string{}
	}
	s.Clients = h.Broker.ConnCount()
	if h.watcher != nil {
		s.Triggers = h.watcher.Stats()
	}
	s.Stuck, s.Obligations = []StuckStatus{}, []ObligationStatus{}
	if h.Ledger != nil {
		s.Ledger = LedgerStatus{Path: h.Ledger.Path(), OK: true}
		if err := h.Ledger.Health(); err != nil {
			s.Ledger.OK, s.Ledger.Error = false, err.Error()
		}
		s.Stuck, s.StuckMore = h.stuck(ctx)
		s.Obligations, s.ObligationsMore = h.obligations(ctx)
	}
	s.Notifications = h.notifier.Recent()
	s.Federation = h.federationStatus()
	s.Telegram = telegramStatus{State: "off"}
	if h.relay != nil {
		st := h.relay.Status()
		s.Telegram = telegramFrom(st)
	}
	return s
}

// stuck lists the session's newest stuck messages; a ledger that cannot be
// read gives none (Ledger.Error says why when it is broken).
func (h *Hub) stuck(ctx context.Context) ([]StuckStatus, bool) {
	msgs, more, err := report.Stuck(ctx, h.Ledger, h.SessionID(), report.StuckListLimit)
	if err != nil {
		h.log.Warn("status: read stuck messages", "err", err)
	}
	out := make([]StuckStatus, 0, len(msgs))
	for _, m := range msgs {
		at := m.UpdatedAtMs
		out = append(out, StuckStatus{MessageID: m.MessageID, From: m.SenderRole, To: m.TargetRole, Header: m.Header, Seq: m.Seq, AtMs: at, Reason: m.Reason})
	}
	return out, more
}

// obligations lists the open obligations; a ledger that cannot be read
// gives none (Ledger.Error says why when it is broken).
func (h *Hub) obligations(ctx context.Context) ([]ObligationStatus, bool) {
	obs, more, err := h.Broker.OpenObligations(ctx, "")
	if err != nil {
		h.log.Warn("status: read open obligations", "err", err)
		return []ObligationStatus{}, false
	}
	out := make([]ObligationStatus, 0, len(obs))
	for _, o := range obs {
		v := ObligationStatus{ObligationView: o}
		if m, err := h.Ledger.Get(ctx, o.MessageID); err == nil {
			v.Stage, v.Delivery, v.ToVerify = m.AckStatus, m.Delivery(), m.ToVerify()
		}
		out = append(out, v)
	}
	return out, more
}

func telegramFrom(st telegram.Status) telegramStatus {
	out := telegramStatus{State: st.State, LastError: st.LastError, Inbound: st.Inbound, Outbound: st.Outbound, Refused: st.Refused}
	if !st.LastPollAt.IsZero() {
		out.LastPollMs = st.LastPollAt.UnixMilli()
	}
	return out
}

// serveStatus answers GET /status (behind operatorOnly).
func (h *Hub) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(h.Snapshot(r.Context()))
}

// operatorOnly serves next to the operator alone, the gate of /status,
// /reload and /debug/pprof/: a request with a Host that is not loopback or
// with an Origin header (a browser) gets 403, one without the operator
// token as "Authorization: Bearer" 401.
func (h *Hub) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !broker.LoopbackHost(r.Host) || r.Header.Get("Origin") != "" {
			http.Error(w, "loopback only, no browsers", http.StatusForbidden)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !h.Tokens.IsOperator(tok) {
			http.Error(w, "operator token required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
