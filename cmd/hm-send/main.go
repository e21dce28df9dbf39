// Command hm-send sends one message through the hm hub (same as `hm send`).
package main

import (
	"os"

	"hm/internal/cli"
)

func main() { os.Exit(cli.Send(os.Args[1:], cli.OSEnv())) }
