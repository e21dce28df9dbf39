// Package agent hosts agent programs (Claude Code, Codex CLI, Gemini CLI or
// any terminal program) in pseudo-terminals and types messages into them so
// that they really submit.
//
// A [Pane] owns one program running as "/bin/sh -c <command>" in its own
// session and process group with the pane's PTY as controlling terminal. The
// pane feeds all output through a virtual terminal (agent/internal/vterm), so
// it knows the screen ([Pane.Screen]) and answers the program's terminal
// queries, keeps a bounded replay buffer of recent output, appends all output
// to a log file, restarts the program with exponential backoff when it exits, and
// runs a delivery engine: one goroutine per pane owns a FIFO queue of
// [Delivery] values and types them one at a time, following SPEC §6: wait
// until the screen is ready by the profile's markers ([Profile.Classify])
// and has stood still for the quiet period, type the text (inside bracketed paste when the
// program enabled it, or as one line pointing to a file for bodies that cannot
// be typed safely), press Enter in a separate write after the profile's Enter
// delay, and verify that the program reacted.
//
// [AttachHandlerContext] serves /attach/<pane> over WebSocket (SPEC §5.4) and
// [AttachClient] is the matching client used by "hm attach".
package agent
