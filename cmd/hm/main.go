// Command hm is the hm coordination hub and its client commands.
package main

import (
	"os"

	"hm/internal/cli"
)

// One binary serves all three: started as hm-send or hm-bg (the links make
// build and make install create), it is that program.
func main() { os.Exit(cli.Run(os.Args, cli.OSEnv())) }
