package agent

import (
	"fmt"

	"hm/internal/ground/buildinfo"
)

// paneProtocol names the protocol by which a root's pane host and its
// hubs pass panes (keeper_adopt.go: the handshake, joining and the
// hand-over): two builds of hm that speak the same one adopt each other's
// panes, across an upgrade (hm restart) or a kill -9. A change that a
// build speaking the old one would misread takes a new value. It is a
// variable so that a test can build hm speaking another (go build
// -ldflags "-X hm/agent.paneProtocol=…"), as a later hm would.
//
//   - "1": a keeper process per pane, listening on the pane's own socket
//     (runtime/panes/<role>.sock); adoption only.
//   - "2": one pane host per root on runtime/panes/host.sock: a request
//     (join or adopt) in the hello, panes joining the host.
//   - "3": the pane's channel carries lines, and the host presses a
//     message's first Enter and records it in the entered log
//     (keeper.go: keeperEnter).
var paneProtocol = "3"

// firstPaneProtocol is what a peer that names none speaks: a build from
// before the protocol was named (a keeper per pane).
const firstPaneProtocol = "1"

// PaneProtocol is the pane hand-over protocol this build speaks.
func PaneProtocol() string { return paneProtocol }

// PaneProtocolError says that two sides (a hub and a pane host, hm
// restart and the running hub) speak different pane protocols: the panes
// cannot pass between them.
type PaneProtocolError struct {
	// They and We name the sides ("the pane host", "this hub").
	They, We string
	// Theirs, TheirVersion: the other side's protocol and hm version.
	Theirs, TheirVersion string
	// Ours, OurVersion: this build's.
	Ours, OurVersion string
}

func (e *PaneProtocolError) Error() string {
	their := e.TheirVersion
	if their == "" {
		their = "an earlier build" // one from before versions were told
	}
	return fmt.Sprintf("%s (hm %s) speaks pane protocol %s, %s (hm %s) speaks pane protocol %s: panes cannot pass between them",
		e.They, their, e.Theirs, e.We, e.OurVersion, e.Ours)
}

// CheckPaneProtocol returns nil when they, a peer speaking pane protocol
// theirs ("" for one that names none) as hm version theirVersion, can hand
// panes to this build (we) or take them from it; else a
// *PaneProtocolError naming both sides. It is the one rule: both ends of
// the pane host's handshake and hm restart's look at the running hub ask
// it.
func CheckPaneProtocol(theirs, theirVersion, they, we string) error {
	if theirs == "" {
		theirs = firstPaneProtocol
	}
	if theirs == paneProtocol {
		return nil
	}
	return &PaneProtocolError{They: they, We: we, Theirs: theirs, TheirVersion: theirVersion, Ours: paneProtocol, OurVersion: buildinfo.Version()}
}
