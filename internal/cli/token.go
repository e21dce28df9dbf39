package cli

import (
	"context"
	"errors"
	"fmt"

	"hm/internal/ground/layout"
)

const tokenSynopsis = "hm token rotate [--root D]"

// tokenRotate is hm token's one action.
const tokenRotate = "rotate"

// runToken: `hm token rotate` replaces the operator secret.
func runToken(_ context.Context, env Env, args []string) int {
	fs := newFlags("token", env)
	root := rootFlag(fs)
	pos, err := parseArgs(fs, args)
	if err == nil && (len(pos) != 1 || pos[0] != tokenRotate) {
		err = errors.New("the only subcommand is rotate")
	}
	if err != nil {
		return usageError(env, fs, tokenSynopsis, err)
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm token:", err)
		return ExitFailed
	}
	if _, err := lay.RotateToken(); err != nil {
		fmt.Fprintln(env.Stderr, "hm token:", err)
		return ExitFailed
	}
	fmt.Fprintf(env.Stdout, "wrote a new operator token to %s (mode 0600)\n", lay.Token())
	if lock, err := lay.LockHub(); err != nil {
		var are *layout.AlreadyRunningError
		if errors.As(err, &are) {
			fmt.Fprintf(env.Stdout, "%v: restart it for the new token to take effect\n", are)
		}
	} else {
		lock.Release()
	}
	return ExitOK
}
