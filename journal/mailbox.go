// This file holds the role-scoped reads behind the hub's query frame (an
// agent's inbox, search, timeline and obligations). They only read: nothing
// here changes a row.

package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"hm/internal/ground/status"
	"hm/roles"

	"zombiezen.com/go/sqlite"
)

// Reader is whose view of the ledger a read takes, and the one rule of who
// may see a message: every read path (the subscription, the query frame's
// inbox, search, timeline and get, delivery-check, message-ack, hm mcp's
// tools and channel, the reports typed into panes) asks a Reader. The zero
// value is the operator's: every row. A Reader with a Role sees the rows
// that role sent or received, where it received a row when the row's
// target_role is Role or, for a row another role sent, one of Groups (the
// group targets that reach Role, e.g. "all" and "others-<another role>";
// the journal does not know the team, so the caller names them, through
// RoleReader). A role never sees rows the hub recorded without ever
// routing them (ForRoles): they were kept out of its panes on purpose.
type Reader struct {
	Role   string
	Groups []string
}

// RoleReader is role's view of the ledger. A main pane (main) receives
// broadcasts and others-<p> for every other main pane p of peers; a
// background slot, the user and a role outside the team (main false)
// receive only rows addressed to them by name.
func RoleReader(role string, main bool, peers []string) Reader {
	r := Reader{Role: role}
	if !main || role == "" {
		return r
	}
	r.Groups = append(r.Groups, roles.RoleAll)
	for _, p := range peers {
		if p != role {
			r.Groups = append(r.Groups, roles.OthersTarget(p))
		}
	}
	return r
}

// ForRoles reports whether a row of status s may ever reach a role. Rows
// the hub recorded without routing them (status recorded: a refused
// Telegram update, an outbound Telegram part not yet sent) are the
// operator's alone. Reader, `hm mcp --channel` and the reports typed into
// panes (briefing, handoff) all apply this one rule.
func ForRoles(s status.Status) bool { return s != status.Recorded }

// ForRolesSQL is ForRoles as an SQL condition over the status column col.
func ForRolesSQL(col string) string { return col + " <> '" + string(status.Recorded) + "'" }

// Operator reports whether r sees every row.
func (r Reader) Operator() bool { return r.Role == "" }

// Received reports whether m reached r's role (always false for the
// operator, who has no mailbox of its own).
func (r Reader) Received(m Message) bool {
	if r.Role == "" || !ForRoles(m.Status) {
		return false
	}
	if m.TargetRole == r.Role {
		return true
	}
	if m.SenderRole == r.Role {
		return false
	}
	for _, g := range r.Groups {
		if m.TargetRole == g {
			return true
		}
	}
	return false
}

// Sees reports whether r may read m.
func (r Reader) Sees(m Message) bool {
	if r.Role == "" {
		return true
	}
	return ForRoles(m.Status) && (m.SenderRole == r.Role || r.Received(m))
}

// received is the SQL condition, over table alias j, that a row reached
// r's role (Received), and its arguments.
func (r Reader) received() (string, []any) {
	var b strings.Builder
	args := []any{r.Role}
	b.WriteString("(" + ForRolesSQL("j.status") + " AND (j.target_role = ?")
	if len(r.Groups) > 0 {
		b.WriteString(" OR (j.sender_role <> ? AND j.target_role IN (")
		args = append(args, r.Role)
		for i, g := range r.Groups {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?")
			args = append(args, g)
		}
		b.WriteString("))")
	}
	b.WriteString("))")
	return b.String(), args
}

// visible is the SQL condition, over table alias j, that r may read a row
// (Sees), and its arguments; "1" for the operator.
func (r Reader) visible() (string, []any) {
	if r.Role == "" {
		return "1", nil
	}
	cond, args := r.received()
	return "(" + cond + " OR (" + ForRolesSQL("j.status") + " AND j.sender_role = ?))", append(args, r.Role)
}

// unreadCond is the SQL condition that a row has no proof of receipt.
const unreadCond = "j.ack_status <> '" + string(status.DeliveredVerified) + "'"

// Unread reports whether m has no proof of receipt yet (its ack_status is
// not delivered.verified): what a mailbox counts as unread.
func Unread(m Message) bool { return m.AckStatus != status.DeliveredVerified }

// MailboxQuery selects a role's received rows for Mailbox.
type MailboxQuery struct {
	SessionID string // the session whose rows are read (required)
	Reader    Reader // whose mailbox (Role required)
	// AfterRowID keeps rows with row_id > AfterRowID (a cursor).
	AfterRowID int64
	// UnreadOnly keeps rows without proof of receipt (Unread).
	UnreadOnly bool
	// Limit caps the rows returned (<= 0: 20).
	Limit int
}

// ErrNoRole means a mailbox read named no role.
var ErrNoRole = errors.New("journal: a mailbox needs a role")

// Mailbox returns the rows of q.SessionID that reached q.Reader's role,
// oldest first, after q.AfterRowID, at most q.Limit; more reports that
// further rows match.
func (l *Ledger) Mailbox(ctx context.Context, q MailboxQuery) (msgs []Message, more bool, err error) {
	if q.Reader.Role == "" {
		return nil, false, ErrNoRole
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	cond, args := q.Reader.received()
	query := "SELECT " + MessageColumnsAs("j") + " FROM comms_journal j INDEXED BY comms_journal_session WHERE j.session_id = ? AND j.row_id > ? AND " + cond
	if q.UnreadOnly {
		query += " AND " + unreadCond
	}
	query += " ORDER BY j.row_id LIMIT ?"
	all := append([]any{q.SessionID, q.AfterRowID}, args...)
	msgs, err = l.queryMessages(ctx, query, append(all, limit+1)...)
	if err != nil {
		return nil, false, fmt.Errorf("journal mailbox: %w", err)
	}
	if len(msgs) > limit {
		msgs, more = msgs[:limit], true
	}
	return msgs, more, nil
}

// UnreadCount counts the rows of sessionID that reached r's role without
// proof of receipt.
func (l *Ledger) UnreadCount(ctx context.Context, sessionID string, r Reader) (int, error) {
	if r.Role == "" {
		return 0, ErrNoRole
	}
	cond, args := r.received()
	n := 0
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT count(*) FROM comms_journal j INDEXED BY comms_journal_session WHERE j.session_id = ? AND "+cond+" AND "+unreadCond,
			func(stmt *sqlite.Stmt) error {
				n = stmt.ColumnInt(0)
				return nil
			}, append([]any{sessionID}, args...)...)
	})
	if err != nil {
		return 0, fmt.Errorf("journal unread count: %w", err)
	}
	return n, nil
}

// Around returns the rows of anchor's session that r may read, up to
// before of them just before anchor and up to after just after it, with
// anchor in between, in row order. Anchor is included as given: the caller
// checks that r may read it.
func (l *Ledger) Around(ctx context.Context, anchor Message, before, after int, r Reader) ([]Message, error) {
	cond, args := r.visible()
	base := "SELECT " + MessageColumnsAs("j") + " FROM comms_journal j INDEXED BY comms_journal_session WHERE j.session_id = ? AND "
	var prev, next []Message
	var err error
	if before > 0 {
		prev, err = l.queryMessages(ctx, base+"j.row_id < ? AND "+cond+" ORDER BY j.row_id DESC LIMIT ?",
			append(append([]any{anchor.SessionID, anchor.RowID}, args...), before)...)
		if err != nil {
			return nil, fmt.Errorf("journal around %s: %w", anchor.MessageID, err)
		}
	}
	if after > 0 {
		next, err = l.queryMessages(ctx, base+"j.row_id > ? AND "+cond+" ORDER BY j.row_id LIMIT ?",
			append(append([]any{anchor.SessionID, anchor.RowID}, args...), after)...)
		if err != nil {
			return nil, fmt.Errorf("journal around %s: %w", anchor.MessageID, err)
		}
	}
	out := make([]Message, 0, len(prev)+1+len(next))
	for i := len(prev) - 1; i >= 0; i-- {
		out = append(out, prev[i])
	}
	out = append(out, anchor)
	return append(out, next...), nil
}

// SearchQuery is a full-text search for SearchWith.
type SearchQuery struct {
	Query string // an FTS5 MATCH expression
	Limit int    // at most this many hits (<= 0: 20)
	// SessionID, From and To, when set, keep rows of that session, from
	// that sender role, to that target role.
	SessionID, From, To string
	// Reader restricts the hits to the rows it may read.
	Reader Reader
}

// SearchWith is Search with filters and a reader: hits newest first. A
// malformed query returns ErrBadQuery wrapped with SQLite's message.
func (l *Ledger) SearchWith(ctx context.Context, q SearchQuery) ([]Hit, error) {
	if strings.TrimSpace(q.Query) == "" {
		return nil, fmt.Errorf("journal search: %w: empty query", ErrBadQuery)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	cond, vargs := q.Reader.visible()
	args := []any{ftsQuery(q.Query)}
	where := "comms_fts MATCH ? AND " + cond
	args = append(args, vargs...)
	for _, f := range []struct{ col, v string }{{"j.session_id", q.SessionID}, {"j.sender_role", q.From}, {"j.target_role", q.To}} {
		if f.v != "" {
			where += " AND " + f.col + " = ?"
			args = append(args, f.v)
		}
	}
	var out []Hit
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT "+MessageColumnsAs("j")+`, snippet(comms_fts, 0, '[', ']', '…', 16)
 FROM comms_fts JOIN comms_journal j ON j.row_id = comms_fts.rowid
 WHERE `+where+` ORDER BY comms_fts.rowid DESC LIMIT ?`, func(stmt *sqlite.Stmt) error {
			out = append(out, Hit{Message: ScanMessage(stmt, 0), Excerpt: stmt.ColumnText(MessageColumnCount)})
			return nil
		}, append(args, limit)...)
	})
	if err != nil {
		if sqlite.ErrCode(err).ToPrimary() == sqlite.ResultError && !errors.Is(err, ErrUnavailable) {
			return nil, fmt.Errorf("journal search %q: %w: %w", q.Query, ErrBadQuery, err)
		}
		return nil, fmt.Errorf("journal search %q: %w", q.Query, err)
	}
	return out, nil
}

// ObligationOf returns the obligation a message opened, if it opened one.
func (l *Ledger) ObligationOf(ctx context.Context, messageID string) (o Obligation, found bool, err error) {
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT "+ObligationColumnsAs("")+" FROM comms_obligations WHERE message_id = ?", func(stmt *sqlite.Stmt) error {
			o, found = ScanObligation(stmt, 0), true
			return nil
		}, messageID)
	})
	if err != nil {
		return Obligation{}, false, fmt.Errorf("journal obligation of %s: %w", messageID, err)
	}
	return o, found, nil
}
