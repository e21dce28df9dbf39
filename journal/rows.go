package journal

import (
	"cmp"
	"fmt"
	"slices"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The writer's rows (issue #18). Every status change reads its message's
// row and writes it back; the writer keeps the rows it wrote recently so a
// change usually reads none, and a transaction writes each changed row
// once, at its end, however many changes it applied to it (a listener's
// delivered and acked, a pane's typed and submitted, often land in one
// group commit).
//
// The rule: inside a write transaction comms_journal rows are read with
// tx.get and changed with tx.setRow; their state columns reach the table
// at tx.flushRows, which runTx calls before it commits. Nothing in the
// writer reads those columns with SQL. The cache is the writer's alone and
// only holds committed rows; another connection's commit (a SquidRun tool,
// an operator's sqlite3) changes PRAGMA data_version, which empties it.

// Bounds of the writer's row cache: recent rows are the hot ones.
const (
	rowCacheRows     = 4096
	rowCacheBytes    = 4 << 20  // raw bodies held, summed
	rowCacheMaxBody  = 64 << 10 // larger rows are not kept
	rowCacheSlackCap = 4 * rowCacheRows
)

// rowCache holds committed rows by message_id, evicting the oldest first.
type rowCache struct {
	rows  map[string]heldRow
	order []string // insertion order; a key may be gone from rows
	bytes int
}

// heldRow is a row the writer holds, with its unchanging columns encoded
// for the chain once it needed them (nil until then).
type heldRow struct {
	m      Message
	static *rowStatic
}

// size is what a held row counts against rowCacheBytes.
func (r heldRow) size() int {
	n := len(r.m.RawBody)
	if r.static != nil {
		n += len(r.static.runs)
	}
	return n
}

func newRowCache() *rowCache { return &rowCache{rows: make(map[string]heldRow)} }

func (c *rowCache) get(id string) (heldRow, bool) {
	r, ok := c.rows[id]
	return r, ok
}

// put keeps r (replacing an older copy in place).
func (c *rowCache) put(r heldRow) {
	old, had := c.rows[r.m.MessageID]
	if len(r.m.RawBody) > rowCacheMaxBody {
		if had {
			c.remove(r.m.MessageID)
		}
		return
	}
	c.bytes += r.size() - old.size()
	c.rows[r.m.MessageID] = r
	if !had {
		c.order = append(c.order, r.m.MessageID)
	}
	for len(c.rows) > rowCacheRows || c.bytes > rowCacheBytes {
		c.evictOldest()
	}
	if len(c.order) > rowCacheSlackCap {
		c.order = slices.DeleteFunc(c.order, func(id string) bool { _, ok := c.rows[id]; return !ok })
	}
}

func (c *rowCache) evictOldest() {
	for len(c.order) > 0 {
		id := c.order[0]
		c.order = c.order[1:]
		if r, ok := c.rows[id]; ok {
			c.bytes -= r.size()
			delete(c.rows, id)
			return
		}
	}
}

func (c *rowCache) remove(id string) {
	if r, ok := c.rows[id]; ok {
		c.bytes -= r.size()
		delete(c.rows, id)
	}
}

func (c *rowCache) clear() {
	clear(c.rows)
	c.order = c.order[:0]
	c.bytes = 0
}

// txRow is a row a transaction read or wrote; dirty when its state
// columns changed and are not written yet.
type txRow struct {
	heldRow
	dirty bool
}

// get loads a message by id: from this transaction's rows, the writer's
// cache, or the table.
func (tx *txn) get(messageID string) (Message, bool, error) {
	if r, ok := tx.rows[messageID]; ok {
		return r.m, true, nil
	}
	if r, ok := tx.cache.get(messageID); ok {
		tx.rows[messageID] = txRow{heldRow: r}
		return r.m, true, nil
	}
	m, ok, err := getMessage(tx.conn, messageID)
	if err != nil || !ok {
		return Message{}, ok, err
	}
	tx.keepRow(m, false)
	return m, true, nil
}

// keepRow records m as this transaction's copy of its row.
func (tx *txn) keepRow(m Message, dirty bool) {
	m = m.row()
	r := tx.rows[m.MessageID]
	tx.rows[m.MessageID] = txRow{heldRow: heldRow{m: m, static: r.static}, dirty: r.dirty || dirty}
}

// static returns the encoded unchanging columns of m's row (chain.go),
// made once for a row this transaction holds.
func (tx *txn) static(m *Message) *rowStatic {
	r, ok := tx.rows[m.MessageID]
	if ok && r.static.of(m) {
		return r.static
	}
	st := newRowStatic(m)
	if ok && r.m.RowID == m.RowID {
		r.static = st
		tx.rows[m.MessageID] = r
	}
	return st
}

// setRow changes the state columns of a row (written at flushRows).
func (tx *txn) setRow(m Message) { tx.keepRow(m, true) }

// dropRow forgets a row this transaction deleted.
func (tx *txn) dropRow(messageID string) {
	delete(tx.rows, messageID)
	tx.dropped = append(tx.dropped, messageID)
}

// flushRows writes the changed rows' state columns, in row order.
func (tx *txn) flushRows() error {
	dirty := tx.dirty[:0]
	for _, r := range tx.rows {
		if r.dirty {
			dirty = append(dirty, r.m)
		}
	}
	tx.dirty = dirty
	slices.SortFunc(dirty, func(a, b Message) int { return cmp.Compare(a.RowID, b.RowID) })
	for _, m := range dirty {
		if err := tx.updateRowState(&m); err != nil {
			return fmt.Errorf("update message %s: %w", m.MessageID, err)
		}
		r := tx.rows[m.MessageID]
		r.m, r.dirty = m, false
		tx.rows[m.MessageID] = r
	}
	return nil
}

// committed moves a committed transaction's rows into the cache.
func (w *writer) committed(tx *txn) {
	for _, id := range tx.dropped {
		w.rows.remove(id)
	}
	for _, r := range tx.rows {
		w.rows.put(r.heldRow)
	}
}

// foreignCommits reports whether another connection committed since the
// writer last looked (PRAGMA data_version), and forgets the writer's
// cached rows and chain tail if so. It runs inside the write transaction.
func (w *writer) foreignCommits(conn *sqlite.Conn) error {
	var v int64
	if err := sqlitex.Execute(conn, "PRAGMA data_version", &sqlitex.ExecOptions{ResultFunc: func(stmt *sqlite.Stmt) error {
		v = stmt.ColumnInt64(0)
		return nil
	}}); err != nil {
		return fmt.Errorf("data version: %w", classify(err))
	}
	if v != w.dataVersion {
		w.dataVersion = v
		w.rows.clear()
		w.tailKnown = false
	}
	return nil
}
