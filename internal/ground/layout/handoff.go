package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ReadHandoff reads what an agent that starts, or lost its context, is
// pointed to: the session handoff (handoffs/session.md), else the startup
// briefing, whichever comes first holding more than blanks. path is ""
// when neither does. A file that cannot be read (other than missing) is
// an error.
func (l Layout) ReadHandoff() (path, text string, err error) {
	for _, p := range []string{l.Session(), l.Briefing()} {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", "", fmt.Errorf("read %s: %w", p, err)
		case strings.TrimSpace(string(data)) != "":
			return p, string(data), nil
		}
	}
	return "", "", nil
}
