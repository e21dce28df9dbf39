package journal

import (
	"cmp"
	"fmt"
	"slices"

	"zombiezen.com/go/sqlite"
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
// The rows sit in slots the map points to: a map's values as large as a
// row would each be allocated on their own.
type rowCache struct {
	at    map[string]int // slot of each row held
	slots []heldRow
	free  []int    // emptied slots, reused first
	order []string // insertion order; a key may be gone from at
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

func newRowCache() *rowCache { return &rowCache{at: make(map[string]int)} }

func (c *rowCache) get(id string) (heldRow, bool) {
	if i, ok := c.at[id]; ok {
		return c.slots[i], true
	}
	return heldRow{}, false
}

// put keeps r (replacing an older copy in place).
func (c *rowCache) put(r heldRow) {
	id := r.m.MessageID
	i, had := c.at[id]
	if len(r.m.RawBody) > rowCacheMaxBody {
		if had {
			c.remove(id)
		}
		return
	}
	if had {
		c.bytes += r.size() - c.slots[i].size()
		c.slots[i] = r
	} else {
		c.bytes += r.size()
		c.at[id] = c.fill(r)
		c.order = append(c.order, id)
	}
	for len(c.at) > rowCacheRows || c.bytes > rowCacheBytes {
		c.evictOldest()
	}
	if len(c.order) > rowCacheSlackCap {
		c.order = slices.DeleteFunc(c.order, func(id string) bool { _, ok := c.at[id]; return !ok })
	}
}

// fill stores r in a free slot and returns it.
func (c *rowCache) fill(r heldRow) int {
	if n := len(c.free); n > 0 {
		i := c.free[n-1]
		c.free = c.free[:n-1]
		c.slots[i] = r
		return i
	}
	c.slots = append(c.slots, r)
	return len(c.slots) - 1
}

func (c *rowCache) evictOldest() {
	for len(c.order) > 0 {
		id := c.order[0]
		c.order = c.order[1:]
		if _, ok := c.at[id]; ok {
			c.remove(id)
			return
		}
	}
}

func (c *rowCache) remove(id string) {
	if i, ok := c.at[id]; ok {
		c.bytes -= c.slots[i].size()
		c.slots[i] = heldRow{}
		c.free = append(c.free, i)
		delete(c.at, id)
	}
}

func (c *rowCache) clear() {
	clear(c.at)
	clear(c.slots)
	c.slots = c.slots[:0]
	c.free = c.free[:0]
	c.order = c.order[:0]
	c.bytes = 0
}

// txRow is a row a transaction read or wrote; dirty when its state
// columns changed and are not written yet.
type txRow struct {
	heldRow
	dirty bool
}

// txRowSet is a transaction's rows by message_id. The rows sit in a slice
// the writer reuses from one transaction to the next, the map holding
// their positions: a map's values as large as a row would each be
// allocated on their own.
type txRowSet struct {
	at   map[string]int
	list []txRow // a dropped row's slot stays, no longer in at
}

func newTxRowSet() *txRowSet { return &txRowSet{at: make(map[string]int)} }

// reset empties s for the next transaction.
func (s *txRowSet) reset() {
	clear(s.at)
	clear(s.list) // let go of the rows' strings
	s.list = s.list[:0]
}

func (s *txRowSet) get(id string) (txRow, bool) {
	if i, ok := s.at[id]; ok {
		return s.list[i], true
	}
	return txRow{}, false
}

func (s *txRowSet) set(id string, r txRow) {
	if i, ok := s.at[id]; ok {
		s.list[i] = r
		return
	}
	s.at[id] = len(s.list)
	s.list = append(s.list, r)
}

func (s *txRowSet) drop(id string) {
	if i, ok := s.at[id]; ok {
		s.list[i] = txRow{}
		delete(s.at, id)
	}
}

// all yields the rows s holds.
func (s *txRowSet) all(yield func(*txRow) bool) {
	for _, i := range s.at {
		if !yield(&s.list[i]) {
			return
		}
	}
}

// get loads a message by id: from this transaction's rows, the writer's
// cache, or the table.
func (tx *txn) get(messageID string) (Message, bool, error) {
	if r, ok := tx.rows.get(messageID); ok {
		return r.m, true, nil
	}
	if r, ok := tx.cache.get(messageID); ok {
		tx.rows.set(messageID, txRow{heldRow: r})
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
	r, _ := tx.rows.get(m.MessageID)
	tx.rows.set(m.MessageID, txRow{heldRow: heldRow{m: m, static: r.static}, dirty: r.dirty || dirty})
}

// static returns the encoded unchanging columns of m's row (chain.go),
// made once for a row this transaction holds.
func (tx *txn) static(m *Message) *rowStatic {
	r, ok := tx.rows.get(m.MessageID)
	if ok && r.static.of(m) {
		return r.static
	}
	st := newRowStatic(m)
	if ok && r.m.RowID == m.RowID {
		r.static = st
		tx.rows.set(m.MessageID, r)
	}
	return st
}

// setRow changes the state columns of a row (written at flushRows).
func (tx *txn) setRow(m Message) { tx.keepRow(m, true) }

// dropRow forgets a row this transaction deleted.
func (tx *txn) dropRow(messageID string) {
	tx.rows.drop(messageID)
	tx.dropped = append(tx.dropped, messageID)
}

// flushRows writes the changed rows' state columns, in row order.
func (tx *txn) flushRows() error {
	dirty := tx.dirty[:0]
	for r := range tx.rows.all {
		if r.dirty {
			dirty = append(dirty, r.m)
			r.dirty = false
		}
	}
	tx.dirty = dirty
	slices.SortFunc(dirty, func(a, b Message) int { return cmp.Compare(a.RowID, b.RowID) })
	for _, m := range dirty {
		if err := tx.updateRowState(&m); err != nil {
			return fmt.Errorf("update message %s: %w", m.MessageID, err)
		}
	}
	return nil
}

// committed moves a committed transaction's rows into the cache.
func (w *writer) committed(tx *txn) {
	for _, id := range tx.dropped {
		w.rows.remove(id)
	}
	for r := range tx.rows.all {
		w.rows.put(r.heldRow)
	}
}

// foreignCommits reports whether another connection committed since the
// writer last looked (PRAGMA data_version), and forgets the writer's
// cached rows and chain tail if so. It runs inside the write transaction.
func (w *writer) foreignCommits(conn *sqlite.Conn) error {
	s, err := w.hot.get(conn, stmtDataVersion)
	if err != nil {
		return fmt.Errorf("data version: %w", classify(err))
	}
	_, err = s.Step()
	v := s.ColumnInt64(0)
	if rerr := s.Reset(); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("data version: %w", classify(err))
	}
	if v != w.dataVersion {
		w.dataVersion = v
		w.rows.clear()
		w.tailKnown = false
	}
	return nil
}
