package initwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonDoc is a JSON file (comments and trailing commas allowed, as Claude
// Code, Codex and Gemini CLI read them) edited through hujson's exact syntax
// tree: what hm does not touch packs back byte for byte, and what it adds is
// laid out like its neighbours.
type jsonDoc struct {
	name string // the file, for errors
	src  []byte // as read (after a byte order mark), for line numbers
	bom  []byte // a leading UTF-8 byte order mark, kept when writing back
	root hujson.Value
	unit string // one level of indentation
	nl   string
	// compact: the file is one line (and not an empty object), so what hm
	// adds stays on that line.
	compact bool
}

// utf8BOM is the UTF-8 byte order mark some Windows editors put first.
var utf8BOM = []byte("\ufeff")

// parseJSON parses a settings file; an empty (or all-blank) file is an empty
// object, and a leading UTF-8 byte order mark is set aside and written back.
// A file that does not parse, or whose top level is not an object, is an
// error naming the file and line.
func parseJSON(name string, data []byte) (*jsonDoc, error) {
	d := &jsonDoc{name: name, unit: "  ", nl: lineEnding(data)}
	if rest, ok := bytes.CutPrefix(data, utf8BOM); ok {
		d.bom, data = utf8BOM, rest
	}
	d.src = data
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}" + d.nl)
	}
	v, err := hujson.Parse(data)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "hujson: ")
		if m := hujsonPos.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("%s:%s:%s: %s", name, m[1], m[2], m[3])
		}
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	d.root = v
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, d.errAt(&d.root, "the top-level value is not an object")
	}
	if err := d.checkUnique(&d.root, ""); err != nil {
		return nil, err
	}
	if len(obj.Members) > 0 {
		if ws := lastLineIndent(obj.Members[0].Name.BeforeExtra); ws != "" {
			d.unit = ws
		}
		d.compact = !bytes.ContainsRune(bytes.TrimSpace(data), '\n')
	}
	return d, nil
}

// checkUnique refuses an object, at v or inside it, that has a key twice:
// the CLIs' JSON readers take the last one, so an edit of the first would
// never be seen. path is v's dotted key path, for the error.
func (d *jsonDoc) checkUnique(v *hujson.Value, path string) error {
	switch c := v.Value.(type) {
	case *hujson.Object:
		seen := make(map[string]bool, len(c.Members))
		for i := range c.Members {
			m := &c.Members[i]
			name := m.Name.Value.(hujson.Literal).String()
			key := name
			if path != "" {
				key = path + "." + name
			}
			if seen[name] {
				return d.errAt(&m.Name, "%q appears twice in one object; JSON readers take the last one: keep one", key)
			}
			seen[name] = true
			if err := d.checkUnique(&m.Value, key); err != nil {
				return err
			}
		}
	case *hujson.Array:
		for i := range c.Elements {
			if err := d.checkUnique(&c.Elements[i], path); err != nil {
				return err
			}
		}
	}
	return nil
}

// hujsonPos takes hujson's "line N, column M: message" apart.
var hujsonPos = regexp.MustCompile(`^line (\d+), column (\d+): (.*)$`)

func (d *jsonDoc) bytes() []byte { return append(slices.Clip(d.bom), d.root.Pack()...) }

// errAt is an error about the value v, which was parsed from src.
func (d *jsonDoc) errAt(v *hujson.Value, format string, args ...any) error {
	off := min(max(v.StartOffset, 0), len(d.src))
	line := 1 + bytes.Count(d.src[:off], []byte("\n"))
	return fmt.Errorf("%s:%d: %s", d.name, line, fmt.Sprintf(format, args...))
}

// lastLineIndent is the blanks after the last newline of extra, "" when
// there is no newline or something else follows it.
func lastLineIndent(extra []byte) string {
	i := bytes.LastIndexByte(extra, '\n')
	if i < 0 {
		return ""
	}
	ws := extra[i+1:]
	if len(bytes.Trim(ws, " \t")) != 0 {
		return ""
	}
	return string(ws)
}

// obj is a JSON object whose keys keep their order when rendered.
type obj []field

type field struct {
	k string
	v any // string, []any or obj
}

// render writes v as JSON: objects one member a line at indentation ind
// (all on one line when compact), arrays of strings on one line.
func render(v any, ind, unit, nl string, compact bool) string {
	switch v := v.(type) {
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // a string always encodes
		return strings.TrimSuffix(b.String(), "\n")
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case []any:
		parts := make([]string, len(v))
		scalars := true
		for i, e := range v {
			_, isString := e.(string)
			scalars = scalars && isString
			parts[i] = render(e, ind+unit, unit, nl, compact)
		}
		if scalars || compact || len(v) == 0 {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		return "[" + nl + ind + unit + strings.Join(parts, ","+nl+ind+unit) + nl + ind + "]"
	case obj:
		parts := make([]string, len(v))
		for i, f := range v {
			parts[i] = render(f.k, "", unit, nl, compact) + ": " + render(f.v, ind+unit, unit, nl, compact)
		}
		if compact || len(v) == 0 {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return "{" + nl + ind + unit + strings.Join(parts, ","+nl+ind+unit) + nl + ind + "}"
	}
	panic(fmt.Sprintf("render: %T", v))
}

func parseRendered(s string) hujson.Value {
	v, err := hujson.Parse([]byte(s))
	if err != nil {
		panic("render produced bad JSON: " + err.Error())
	}
	return v
}

// decode is the plain Go value of v (comments dropped).
func decode(v hujson.Value) any {
	v = v.Clone()
	v.Standardize()
	var out any
	if json.Unmarshal(v.Pack(), &out) != nil {
		return nil
	}
	return out
}

// layout works out where a new last element of a composite goes: before is
// the new element's leading extra, tail the composite's new closing extra.
// lastBefore is the leading extra of the current last element (nil when
// empty), tail the current closing extra, depth the composite's depth (the
// root object is 0). A composite written on one line stays on one line
// (compact), and so does an empty one whose parent is on one line; there
// the new element follows the comma with sep, the spacing of its neighbours.
func (d *jsonDoc) layout(lastBefore []byte, hasElems bool, tail []byte, depth int, parentOneLine bool, sep []byte) (before, newTail []byte, ind string, compact bool) {
	if d.compact || oneLine(lastBefore, hasElems, tail) || !hasElems && parentOneLine && !bytes.ContainsRune(tail, '\n') {
		if len(bytes.Trim(sep, " \t")) != 0 {
			sep = []byte(" ") // a comment: it stays with its own element
		}
		return append([]byte(nil), sep...), tail, "", true
	}
	ind = strings.Repeat(d.unit, depth+1)
	if ws := lastLineIndent(lastBefore); hasElems && ws != "" {
		ind = ws
	}
	closing := strings.Repeat(d.unit, depth)
	if bytes.ContainsRune(tail, '\n') {
		closing = lastLineIndent(tail)
	}
	head := bytes.TrimRight(tail, " \t\r\n")
	before = append(append([]byte(nil), head...), d.nl+ind...)
	return before, []byte(d.nl + closing), ind, false
}

// oneLine: a composite with elements, written on one line.
func oneLine(lastBefore []byte, hasElems bool, tail []byte) bool {
	return hasElems && !bytes.ContainsRune(tail, '\n') && !bytes.ContainsRune(lastBefore, '\n')
}

func objOneLine(o *hujson.Object) bool {
	n := len(o.Members)
	return n > 0 && oneLine(o.Members[n-1].Name.BeforeExtra, true, o.AfterExtra)
}

// addMember appends name: v to o (at depth) and returns the new member.
func (d *jsonDoc) addMember(o *hujson.Object, depth int, name string, v any, parentOneLine bool) *hujson.ObjectMember {
	var lastBefore []byte
	colon := []byte(" ")
	n := len(o.Members)
	if n > 0 {
		lastBefore = o.Members[n-1].Name.BeforeExtra
		if vb := o.Members[n-1].Value.BeforeExtra; !bytes.ContainsAny(vb, "\n/") {
			colon = vb
		}
	}
	sep := lastBefore
	if n == 1 {
		sep = colon // the one member follows '{', not a comma: space as after its colon
	}
	before, tail, ind, compact := d.layout(lastBefore, n > 0, o.AfterExtra, depth, parentOneLine, sep)
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.String(name)},
		Value: parseRendered(render(v, ind, d.unit, d.nl, compact)),
	}
	m.Value.BeforeExtra = append([]byte(nil), colon...)
	if n > 0 && o.Members[n-1].Value.AfterExtra != nil {
		m.Value.AfterExtra = []byte{} // keep the trailing comma
	}
	o.Members = append(o.Members, m)
	o.AfterExtra = tail
	return &o.Members[len(o.Members)-1]
}

// addElem appends v to a (at depth).
func (d *jsonDoc) addElem(a *hujson.Array, depth int, v any, parentOneLine bool) {
	var lastBefore []byte
	n := len(a.Elements)
	if n > 0 {
		lastBefore = a.Elements[n-1].BeforeExtra
	}
	sep := lastBefore
	if n == 1 {
		sep = []byte(" ") // the one element follows '[', not a comma
	}
	before, tail, ind, compact := d.layout(lastBefore, n > 0, a.AfterExtra, depth, parentOneLine, sep)
	e := parseRendered(render(v, ind, d.unit, d.nl, compact))
	e.BeforeExtra = before
	if n > 0 && a.Elements[n-1].AfterExtra != nil {
		e.AfterExtra = []byte{}
	}
	a.Elements = append(a.Elements, e)
	a.AfterExtra = tail
}

func member(o *hujson.Object, name string) *hujson.ObjectMember {
	for i := range o.Members {
		if lit, ok := o.Members[i].Name.Value.(hujson.Literal); ok && lit.String() == name {
			return &o.Members[i]
		}
	}
	return nil
}

// lookup returns o's member name, nil when it is missing, and an error when
// its value is not of kind ('{' or '[').
func (d *jsonDoc) lookup(o *hujson.Object, name string, kind hujson.Kind, where string) (*hujson.ObjectMember, error) {
	m := member(o, name)
	if m != nil && m.Value.Value.Kind() != kind {
		what := map[hujson.Kind]string{'{': "an object", '[': "an array"}[kind]
		return nil, d.errAt(&m.Value, "%s is not %s", where, what)
	}
	return m, nil
}

// isHMCommand reports whether the shell command line runs hm (on PATH or by
// a path ending in /hm) with args as its first arguments.
func isHMCommand(cmd string, args ...string) bool {
	f := strings.Fields(cmd)
	if len(f) < 1+len(args) || path.Base(f[0]) != "hm" {
		return false
	}
	for i, a := range args {
		if f[1+i] != a {
			return false
		}
	}
	return true
}

// mcpUpToDate: a server entry that runs `hm mcp` (hm by any path, with any
// further arguments) is left as it is.
func mcpUpToDate(entry any) bool {
	m, ok := entry.(map[string]any)
	if !ok {
		return false
	}
	cmd, _ := m["command"].(string)
	args, _ := m["args"].([]any)
	return isHMCommand(cmd) && len(args) > 0 && args[0] == "mcp"
}

// setMCPServer makes servers.hm run `hm mcp` (key "mcpServers" in Claude's
// .mcp.json and Gemini's settings.json), keeping the user's other servers
// and the entry's other keys (env, …).
func (d *jsonDoc) setMCPServer(key string) (bool, error) {
	entry := obj{{"command", "hm"}, {"args", []any{"mcp"}}}
	root := d.root.Value.(*hujson.Object)
	sm, err := d.lookup(root, key, '{', key)
	if err != nil {
		return false, err
	}
	if sm == nil {
		d.addMember(root, 0, key, obj{{"hm", entry}}, false)
		return true, nil
	}
	servers := sm.Value.Value.(*hujson.Object)
	hm := member(servers, "hm")
	if hm == nil {
		d.addMember(servers, 1, "hm", entry, objOneLine(root))
		return true, nil
	}
	if mcpUpToDate(decode(hm.Value)) {
		return false, nil
	}
	e, ok := hm.Value.Value.(*hujson.Object)
	if !ok {
		return false, d.errAt(&hm.Value, "%s.hm is not an object", key)
	}
	for _, f := range entry {
		if m := member(e, f.k); m != nil {
			m.Value.Value = parseRendered(render(f.v, "", d.unit, d.nl, true)).Value
		} else {
			d.addMember(e, 2, f.k, f.v, objOneLine(servers))
		}
	}
	return true, nil
}

// setHooks adds each hook to hooks.<event> as a group of its own, unless a
// group of that event already runs the same hm command (Hook.Runs), and
// removes handlers that run `hm receipt` (`hm hook` records receipts now).
// Other groups and handlers are not touched. It returns the hooks it added
// (Hook.String) and how many handlers it removed.
func (d *jsonDoc) setHooks(specs []Hook) (added []string, removed int, err error) {
	root := d.root.Value.(*hujson.Object)
	hm, err := d.lookup(root, "hooks", '{', "hooks")
	if err != nil {
		return nil, 0, err
	}
	if hm == nil {
		var all obj
		byEvent := map[string]int{} // index in all
		for _, s := range specs {
			if i, ok := byEvent[s.Event]; ok {
				all[i].v = append(all[i].v.([]any), s.group())
			} else {
				byEvent[s.Event] = len(all)
				all = append(all, field{s.Event, []any{s.group()}})
			}
			added = append(added, s.String())
		}
		d.addMember(root, 0, "hooks", all, false)
		return added, 0, nil
	}
	keep := map[string]bool{}
	for _, s := range specs {
		keep[s.Event] = true
	}
	if removed, err = d.removeReceiptHooks(&hm.Value, keep); err != nil {
		return nil, 0, err
	}
	hooks := hm.Value.Value.(*hujson.Object)
	for _, s := range specs {
		em, err := d.lookup(hooks, s.Event, '[', "hooks."+s.Event)
		switch {
		case err != nil:
			return nil, 0, err
		case em == nil:
			d.addMember(hooks, 1, s.Event, []any{s.group()}, objOneLine(root))
		case hasHook(decode(em.Value), s.Runs):
			continue
		default:
			d.addElem(em.Value.Value.(*hujson.Array), 2, s.group(), objOneLine(hooks))
		}
		added = append(added, s.String())
	}
	return added, removed, nil
}

// hasHook reports whether a decoded event array has a command handler
// whose command satisfies match.
func hasHook(groups any, match func(string) bool) bool {
	gs, _ := groups.([]any)
	for _, g := range gs {
		gm, _ := g.(map[string]any)
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			if cmd, ok := hm["command"].(string); ok && match(cmd) {
				return true
			}
		}
	}
	return false
}

// removeReceiptHooks removes every handler that runs `hm receipt`, then a
// group left with no handlers and an event left with no groups (unless
// keep holds it).
func (d *jsonDoc) removeReceiptHooks(hv *hujson.Value, keep map[string]bool) (int, error) {
	hooks := hv.Value.(*hujson.Object)
	var ops []string
	removed := 0
	for _, ev := range hooks.Members {
		name := ev.Name.Value.(hujson.Literal).String()
		groups, _ := decode(ev.Value).([]any)
		emptied := 0
		for g := len(groups) - 1; g >= 0; g-- {
			gm, _ := groups[g].(map[string]any)
			hs, _ := gm["hooks"].([]any)
			n := 0
			for h := len(hs) - 1; h >= 0; h-- {
				hm, _ := hs[h].(map[string]any)
				if cmd, ok := hm["command"].(string); ok && isHMCommand(cmd, "receipt") {
					ops = append(ops, fmt.Sprintf("/hooks/%s/%d/hooks/%d", pointerEscape(name), g, h))
					n++
				}
			}
			removed += n
			if n > 0 && n == len(hs) {
				ops = append(ops, fmt.Sprintf("/hooks/%s/%d", pointerEscape(name), g))
				emptied++
			}
		}
		if emptied > 0 && emptied == len(groups) && !keep[name] {
			ops = append(ops, "/hooks/"+pointerEscape(name))
		}
	}
	if len(ops) == 0 {
		return 0, nil
	}
	var patch []map[string]string
	for _, p := range ops {
		patch = append(patch, map[string]string{"op": "remove", "path": p})
	}
	b, _ := json.Marshal(patch)
	if err := d.root.Patch(b); err != nil {
		return 0, fmt.Errorf("%s: removing hm receipt hooks: %w", d.name, err)
	}
	return removed, nil
}

func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
