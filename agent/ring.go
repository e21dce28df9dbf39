package agent

// ring is a fixed-capacity byte buffer that keeps the most recent bytes
// written to it. It is not safe for concurrent use.
type ring struct {
	buf   []byte
	start int // index of the oldest byte
	n     int // bytes held
}

// newRing returns a ring holding at most size bytes (at least 1).
func newRing(size int) *ring {
	if size < 1 {
		size = 1
	}
	return &ring{buf: make([]byte, size)}
}

// Write appends p, discarding the oldest bytes beyond the capacity.
func (r *ring) Write(p []byte) {
	c := len(r.buf)
	if len(p) >= c {
		copy(r.buf, p[len(p)-c:])
		r.start, r.n = 0, c
		return
	}
	end := (r.start + r.n) % c
	k := copy(r.buf[end:], p)
	copy(r.buf, p[k:])
	r.n += len(p)
	if r.n > c {
		r.start = (r.start + r.n - c) % c
		r.n = c
	}
}

// Len returns the number of bytes held.
func (r *ring) Len() int { return r.n }

// Tail returns a copy of the last at most max bytes. A cut that falls inside a
// UTF-8 sequence skips the sequence's continuation bytes.
func (r *ring) Tail(max int) []byte {
	n := r.n
	if max >= 0 && n > max {
		n = max
	}
	out := make([]byte, n)
	c := len(r.buf)
	from := (r.start + r.n - n) % c
	k := copy(out, r.buf[from:min(c, from+n)])
	copy(out[k:], r.buf[:n-k])
	if n < r.n {
		i := 0
		for i < len(out) && i < 3 && out[i]&0xC0 == 0x80 {
			i++
		}
		out = out[i:]
	}
	return out
}
