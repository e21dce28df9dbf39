// Command hm-send sends one message through the hm hub (same as `hm send`).
// It links internal/sendcmd alone, none of the hub (internal/layers holds
// it to that), so it starts quickly in every pane that sends.
package main

import (
	"os"

	"hm/internal/cmdline"
	"hm/internal/sendcmd"
)

func main() { os.Exit(sendcmd.Main(os.Args[1:], cmdline.OSEnv())) }
