package cli

import (
	"context"
	"fmt"

	"hm/internal/ground/buildinfo"
)

// runVersion: `hm version` and `hm --version` print the version and the
// commit the binary was built from (internal/ground/buildinfo).
func runVersion(_ context.Context, env Env, args []string) int {
	fs := newFlags("version", env)
	asJSON := jsonFlag(fs, "the version, commit and Go version")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", pos[0])
		}
		return usageError(env, fs, "hm version [--json]", err)
	}
	if *asJSON {
		printJSON(env.Stdout, buildinfo.Read())
		return ExitOK
	}
	printVersion(env.Stdout, "hm")
	return ExitOK
}
