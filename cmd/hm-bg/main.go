// Command hm-bg controls background builder slots (same as `hm bg`).
package main

import (
	"os"

	"hm/internal/cli"
)

func main() { os.Exit(cli.Bg(os.Args[1:], cli.OSEnv())) }
