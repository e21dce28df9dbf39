package vterm

// Erasing and editing: erase in display/line, insert and delete characters.

func (t *Terminal) eraseDisplay(mode int) {
	ls := t.lines()
	switch mode {
	case 0:
		t.eraseLine(0)
		for _, l := range ls[t.cur.y+1:] {
			fill(l, 0, len(l))
		}
	case 1:
		t.eraseLine(1)
		for _, l := range ls[:t.cur.y] {
			fill(l, 0, len(l))
		}
	case 2, 3:
		for _, l := range ls {
			fill(l, 0, len(l))
		}
	}
	t.cur.wrapNext = false
}

func (t *Terminal) eraseLine(mode int) {
	l := t.lines()[t.cur.y]
	switch mode {
	case 0:
		t.clearWideAt(l, t.cur.x)
		fill(l, t.cur.x, len(l))
	case 1:
		t.clearWideAt(l, t.cur.x)
		fill(l, 0, t.cur.x+1)
	case 2:
		fill(l, 0, len(l))
	}
	t.cur.wrapNext = false
}

func fill(l []rune, from, to int) {
	for i := from; i < to && i < len(l); i++ {
		l[i] = ' '
	}
}

func (t *Terminal) insertBlanks(n int) {
	l := t.lines()[t.cur.y]
	x := t.cur.x
	n = min(n, t.cols-x)
	t.clearWideAt(l, x)
	copy(l[x+n:], l[x:])
	fill(l, x, x+n)
	fixWideEdge(l)
	t.cur.wrapNext = false
}

func (t *Terminal) deleteChars(n int) {
	l := t.lines()[t.cur.y]
	x := t.cur.x
	n = min(n, t.cols-x)
	t.clearWideAt(l, x)
	t.clearWideAt(l, x+n-1)
	copy(l[x:], l[x+n:])
	fill(l, t.cols-n, t.cols)
	if x < len(l) && l[x] == wideTail {
		l[x] = ' '
	}
	t.cur.wrapNext = false
}
