// Command hm is the hm coordination hub and its client commands.
package main

import (
	"os"

	"hm/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], cli.OSEnv())) }
