package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/hooknote"
	"hm/internal/ground/layout"
	"hm/internal/hook"
)

const hookSynopsis = "hm hook <claude|codex|gemini> <event> [--wait D] < hook-input.json"

// The hook's time limits: to reach the hub and get its claim answered (the
// dial included), and then to settle the claim once the output is printed.
// A hub that does not answer in time is treated as down; nothing is
// printed. A hub that is down refuses the dial at once; these bound a hub
// slow to answer on a loaded machine (make test under load saw 0.5 s and
// 1.5 s run out). The claim's answer and the claim-ack together stay
// inside the hub's claim lease (broker.Config.ClaimLease, 5 s): a claim
// acked after it would be given back to the pane after being printed.
const (
	hookDialTimeout  = 2 * time.Second
	hookClaimTimeout = 3 * time.Second
	hookAckTimeout   = time.Second
	// hookWaitSlack is how much longer than --wait the hook waits for the
	// hub's answer to its waiting claim.
	hookWaitSlack = 5 * time.Second
)

// ExitWake is what `hm hook claude Stop --wait` exits with when it
// carries messages on stderr: Claude Code wakes the session with them
// (asyncRewake).
const ExitWake = 2

// runHook is `hm hook <cli> <event>`, the command a CLI's hooks run
// (docs/protocol.md §14). It reads the hook's JSON input on stdin, takes
// from the hub what the event calls for in one round trip (receipts for the
// prompt's [hm:<id>] markers, the messages queued for the pane and not yet
// being typed, the session context), prints the CLI's JSON answer and tells
// the hub which messages it printed. It exits 0, and prints nothing when
// there is nothing to say or anything fails (the hub is down, the input is
// not JSON, …): a hook must never block the agent. The one exception is
// Claude Code's asyncRewake Stop hook (--wait): it runs in the background,
// waits for the next message, and exits 2 with it on stderr, which wakes
// the idle session.
func runHook(ctx context.Context, env Env, args []string) int {
	started := time.Now() // for --wait: the stop this hook runs for happened by now
	fs := newFlags("hook", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	wait := fs.Duration("wait", 0, "Claude Code's asyncRewake Stop hook: wait up to this long for a message, and wake the idle session with it (exit 2)")
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 2 {
		err = fmt.Errorf("want a CLI and an event")
	}
	if err != nil {
		usageError(env, fs, hookSynopsis, err)
		return ExitOK // never a hook failure (exit 2 would block the agent)
	}
	ev, err := hook.Lookup(pos[0], pos[1])
	if err == nil && *wait > 0 {
		ev, err = ev.Waiting()
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm hook:", err)
		return ExitOK
	}
	data, err := io.ReadAll(io.LimitReader(env.Stdin, 4<<20))
	if err != nil {
		return ExitOK
	}
	in, err := hook.ParseInput(data)
	if err != nil {
		return ExitOK // not a CLI's hook input
	}
	// A stop of a turn that already went on because a stop hook said so
	// (Gemini's AfterAgent after hm's deny): no second block (no loop),
	// what waits is typed once the agent is idle; but the turn the block
	// began ends here, and the pane must hear it (tellOnly).
	tellOnly := ev.Kind == hook.Stop && in.StopHookActive && *wait == 0
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		return ExitOK
	}
	var receipts []string
	if ev.Kind == hook.Prompt {
		receipts = in.Receipts()
	}
	cctx, cancel := context.WithTimeout(ctx, hookClaimTimeout+*wait+min(*wait, hookWaitSlack))
	defer cancel()
	cl, res, err := hookClaim(cctx, cfg, ev, hookRequest(ev, in, *wait, started, tellOnly), receipts)
	if err != nil {
		return ExitOK
	}
	defer cl.CloseNow()
	var doc hook.Doc
	if ev.Kind == hook.SessionStart {
		doc = handoffDoc(cfg.layout)
	}
	out := hook.Compose(ev, res, doc)
	// Wake speaks on stderr with exit 2 (what wakes the session); the
	// other events answer in JSON on stdout with exit 0.
	w, exit := env.Stdout, ExitOK
	if ev.Kind == hook.Wake {
		w, exit = env.Stderr, ExitWake
	}
	if b := hook.Output(ev, out.Text); len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return ExitOK // not printed: the claim-ack is not sent, the hub gives them back
		}
	}
	if len(out.Emitted) == 0 {
		exit = ExitOK
	}
	if len(res.Messages) == 0 {
		return exit
	}
	// Only now that the output is out: the hub records what it carried
	// (delivered.context) and gives the rest back to the pane.
	actx, cancel2 := context.WithTimeout(ctx, hookAckTimeout)
	defer cancel2()
	ack := proto.ClaimAck{MessageIDs: out.Emitted}
	if len(out.Emitted) > 0 && (ev.Kind == hook.Stop || ev.Kind == hook.Wake) {
		// The stop is blocked (or the session woken) with them: the agent
		// works on them, not ready as the claim said.
		ack.State = hook.StateBusy
	}
	payload, _ := json.Marshal(ack)
	err = cl.Request(actx, proto.Frame{Type: proto.TypeClaimAck, RequestID: "hook-ack", Payload: payload}, proto.TypeResponse, nil)
	if err != nil && len(out.Emitted) > 0 {
		// The agent has them, the hub may never hear it (killed before the
		// claim-ack): the next hub reads this before it re-routes them.
		// (Nothing on stderr if it cannot be written: a hook never fails.)
		_ = hooknote.Write(cfg.layout.HookNotes(), hooknote.Note{Role: res.Role, Hook: ev.String(), IDs: out.Emitted})
	}
	return exit
}

// hookRequest is the claim of hook event ev with input in: the pane state
// the event tells, the CLI's session id, and with tellOnly nothing to
// claim; with wait, the waiting hook's claim of a stop at started.
func hookRequest(ev hook.Event, in hook.Input, wait time.Duration, started time.Time, tellOnly bool) proto.ClaimRequest {
	req := proto.ClaimRequest{Session: ev.Kind == hook.SessionStart, Hook: ev.String(), State: ev.State(in), WaitMs: wait.Milliseconds(),
		MidTurn: ev.MidTurn(), SessionID: in.SessionID}
	if wait > 0 {
		// A prompt that reached the hub before this claim (the agent back
		// at work) releases it at once.
		req.WaitSinceMs = started.UnixMilli()
	}
	if ev.Kind == hook.Notification || tellOnly {
		req.Max = -1 // it tells the state; nothing can join the agent's context now
	}
	return req
}

// hookClaim connects to the hub and, in one round trip, registers as the
// pane's role, sends the receipts and sends req, the claim of event ev
// (hookRequest). It returns the connection and the hub's answer to the
// claim.
func hookClaim(ctx context.Context, cfg clientConfig, ev hook.Event, req proto.ClaimRequest, receipts []string) (*client.Client, proto.ClaimResult, error) {
	var res proto.ClaimResult
	dctx, cancel := context.WithTimeout(ctx, hookDialTimeout)
	cl, err := client.DialToken(dctx, cfg.url(), cfg.token)
	cancel()
	if err != nil {
		return nil, res, err
	}
	payload, _ := json.Marshal(req)
	err = cl.WriteJSON(ctx, proto.Frame{Type: proto.TypeRegister, Role: cfg.role, Token: cfg.token})
	if err == nil {
		err = sendReceipt(ctx, cl, ev.String(), receipts)
	}
	if err == nil {
		err = cl.WriteJSON(ctx, proto.Frame{Type: proto.TypeClaim, RequestID: "hook-claim", Payload: payload})
	}
	if err == nil {
		_, err = cl.Await(ctx, proto.TypeRegistered, "", "")
	}
	var raw []byte
	if err == nil {
		raw, err = cl.Await(ctx, proto.TypeResponse, "hook-claim", "")
	}
	var resp struct {
		Result proto.ClaimResult `json:"result"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &resp)
	}
	if err != nil {
		cl.CloseNow()
		return nil, res, err
	}
	return cl, resp.Result, nil
}

// handoffDoc is the session handoff, else the startup briefing
// (layout.ReadHandoff), shown to an agent that starts or lost its context;
// none when it cannot be read (a hook never fails).
func handoffDoc(lay layout.Layout) hook.Doc {
	path, text, err := lay.ReadHandoff()
	if err != nil || path == "" {
		return hook.Doc{}
	}
	return hook.Doc{Path: path, Text: strings.TrimRight(text, "\n")}
}

// sendReceipt sends, without waiting for the answer, the receipt of one
// submitted prompt holding the markers ids (none: nothing is sent): the
// hub marks each typed message delivered.verified, records two or more as
// a merge, and ignores a message hm itself put in the agent's context
// (SPEC §6 step 5; docs/protocol.md §14).
func sendReceipt(ctx context.Context, cl *client.Client, witness string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	payload, _ := json.Marshal(proto.Receipt{MessageIDs: ids, Hook: witness})
	return cl.WriteJSON(ctx, proto.Frame{Type: proto.TypeReceipt, RequestID: receiptRequest, Payload: payload})
}

// receiptRequest is the requestId of the receipt frame.
const receiptRequest = "receipt"
