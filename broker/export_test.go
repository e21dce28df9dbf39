package broker

// DeliveredSetSizes returns the size of each registered listener's
// delivered set (tests only).
func (b *Broker) DeliveredSetSizes() []int {
	b.mu.Lock()
	conns := make([]*conn, 0, len(b.conns))
	for _, c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	var out []int
	for _, c := range conns {
		c.mu.Lock()
		if c.subscribed || len(c.delivered) > 0 {
			out = append(out, len(c.delivered))
		}
		c.mu.Unlock()
	}
	return out
}

// RemindRounds is how often the reminder loop looked at the open
// obligations.
func (b *Broker) RemindRounds() int64 { return b.remindRounds.Load() }
