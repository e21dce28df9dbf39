// One pane: a header (role, program, state, queue) and an xterm attached
// over /ui/attach/<pane> (docs/protocol.md "Attach": binary frames carry the
// terminal's bytes both ways, a text frame {"type":"resize"} resizes the
// pane, ?mode=view is read-only).
import { Terminal } from './vendor/xterm/xterm.mjs';
import { FitAddon } from './vendor/xterm/addon-fit.mjs';
import { wsURL } from './hub.js';

const enc = new TextEncoder();

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// shortProgram is a command line without its leading VAR=value words and
// with its program's directory dropped: "A=1 /usr/bin/claude --x" is
// "claude --x". The full line is the element's title.
export function shortProgram(cmd) {
  const words = cmd.trim().split(/\s+/);
  while (words.length > 1 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) words.shift();
  if (words.length) words[0] = words[0].replace(/^.*\//, '');
  return words.join(' ');
}

export class PaneView {
  // name is what the attach URL names (role or alias); onFocus asks the
  // page to enlarge this pane.
  constructor(name, { readOnly, onFocus }) {
    this.name = name;
    this.readOnly = !!readOnly;
    this.root = el('article', 'pane');
    this.root.dataset.role = name;
    const head = el('header', 'pane-head');
    this.roleEl = el('strong', 'role', name);
    this.progEl = el('span', 'prog');
    this.stateEl = el('span', 'badge state', 'starting');
    this.stateEl.dataset.state = 'starting';
    this.queueEl = el('span', 'queue', 'queue 0');
    // How the pane's program came to be, in the hub's words
    // (originWords: started, adopted, restarted, resumed, with the count).
    this.originEl = el('span', 'badge origin', '');
    this.originEl.hidden = true;
    this.driftEl = el('span', 'badge drift', '');
    this.driftEl.hidden = true;
    this.connEl = el('span', 'conn', '');
    this.roBtn = el('button', 'ro', '');
    this.roBtn.type = 'button';
    this.roBtn.onclick = (e) => { e.stopPropagation(); this.setReadOnly(!this.readOnly); };
    this.focusBtn = el('button', 'focusbtn', '⤢');
    this.focusBtn.type = 'button';
    this.focusBtn.title = 'enlarge / back to grid';
    this.focusBtn.onclick = (e) => { e.stopPropagation(); onFocus(this); };
    head.append(this.roleEl, this.progEl, this.stateEl, this.originEl, this.queueEl, this.driftEl, el('span', 'spacer'), this.connEl, this.roBtn, this.focusBtn);
    head.ondblclick = () => onFocus(this);
    this.body = el('div', 'pane-body');
    this.root.append(head, this.body);
    this.term = new Terminal({
      convertEol: false, cursorBlink: false, scrollback: 2000, fontSize: 13,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
      theme: { background: '#111418', foreground: '#d8dee9' },
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.opened = false;
    this.ws = null;
    this.closed = false;
    this.gotOutput = false;
    this.term.onData((d) => this.input(enc.encode(d)));
    this.term.onBinary((d) => {
      const b = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) b[i] = d.charCodeAt(i) & 0xff;
      this.input(b);
    });
    this.term.onResize(({ cols, rows }) => this.sendResize(cols, rows));
    this.ro = new ResizeObserver(() => this.refit());
    this.ro.observe(this.body);
    this.renderRO();
  }

  // mount opens the terminal once the element is in the document, then
  // attaches at the fitted size.
  mount() {
    if (this.opened) return;
    this.term.open(this.body);
    this.opened = true;
    this.refit();
    this.attach();
  }

  // refit sizes the terminal to its box. A read-only view cannot resize
  // the pane, so it takes the pane's columns instead (the status's cols):
  // a pane wider than the box scrolls sideways rather than being cut.
  refit() {
    if (!this.opened || this.body.clientWidth < 20 || this.body.clientHeight < 20) return;
    try {
      const dims = this.fit.proposeDimensions();
      if (!dims || isNaN(dims.cols) || isNaN(dims.rows)) return;
      const cols = this.readOnly && this.ptyCols ? this.ptyCols : dims.cols;
      if (cols !== this.term.cols || dims.rows !== this.term.rows) this.term.resize(cols, dims.rows);
    } catch { /* not laid out yet */ }
  }

  attach() {
    if (this.closed) return;
    const q = new URLSearchParams({ cols: this.term.cols, rows: this.term.rows });
    if (this.readOnly) q.set('mode', 'view');
    const ws = new WebSocket(wsURL('/ui/attach/' + encodeURIComponent(this.name) + '?' + q));
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.conn('connecting');
    let first = true;
    ws.onopen = () => {
      this.conn(this.readOnly ? 'view' : 'live');
      // As hm attach does: the size in the URL renders the first screen,
      // the first resize frame sizes the pane.
      this.sendResize(this.term.cols, this.term.rows);
    };
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') return;
      const data = new Uint8Array(e.data);
      if (first) {
        // The first frame is the whole current screen: start from a clean terminal.
        first = false;
        this.term.reset();
      }
      this.term.write(data, () => {
        // First paint: the first time the screen holds text (the first
        // frame may be a blank screen when the program has not printed).
        if (!this.gotOutput && this.hasText()) {
          this.gotOutput = true;
          requestAnimationFrame(() => { this.root.dataset.painted = String(performance.timeOrigin + performance.now()); });
        }
      });
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.conn('disconnected');
      // Attach again on the next status (about a second) that still lists
      // this pane as running: a killed slot is dropped instead.
      this.reattach = true;
    };
  }

  hasText() {
    const b = this.term.buffer.active;
    for (let i = 0; i < b.length; i++) {
      const l = b.getLine(i);
      if (l && l.translateToString(true).trim()) return true;
    }
    return false;
  }

  conn(s) {
    this.connEl.textContent = s;
    this.root.dataset.conn = s;
  }

  input(bytes) {
    if (this.readOnly || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(bytes);
  }

  sendResize(cols, rows) {
    this.root.dataset.size = cols + 'x' + rows;
    if (this.readOnly || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  setReadOnly(ro) {
    if (this.readOnly === ro) return;
    this.readOnly = ro;
    this.renderRO();
    const old = this.ws;
    this.ws = null;
    if (old) old.close();
    this.attach();
  }

  renderRO() {
    this.roBtn.textContent = this.readOnly ? 'read-only' : 'typing';
    this.roBtn.title = this.readOnly ? 'read-only: click to type into this pane' : 'typing: click to make read-only';
    this.root.classList.toggle('readonly', this.readOnly);
    this.refit();
  }

  update(p) {
    if (p.cols && p.cols !== this.ptyCols) {
      this.ptyCols = p.cols;
      if (this.readOnly) this.refit();
    }
    const prog = shortProgram(p.command || '') + (p.profile ? ' (' + p.profile + ')' : '');
    this.progEl.textContent = prog;
    this.progEl.title = p.command || '';
    const state = p.state || 'unknown';
    this.stateEl.textContent = state;
    this.stateEl.dataset.state = state;
    this.stateEl.title = [p.readiness, p.waiting].filter(Boolean).join(' · ');
    this.queueEl.textContent = 'queue ' + (p.queued || 0);
    this.originEl.hidden = !p.originWords;
    this.originEl.textContent = p.originWords || '';
    this.originEl.dataset.origin = p.origin || '';
    this.root.dataset.origin = p.origin || '';
    // Profile drift: typed on the unmarked wait (docs/operations.md).
    this.driftEl.hidden = !p.drift;
    this.driftEl.textContent = p.drift ? 'profile drift' : '';
    this.driftEl.title = p.drift ? p.drift.warning : '';
    this.root.dataset.drift = p.drift ? 'true' : '';
    this.root.dataset.state = state;
    if (this.reattach && !this.closed && state !== 'exited') {
      this.reattach = false;
      this.attach();
    }
  }

  destroy() {
    this.closed = true;
    this.ro.disconnect();
    if (this.ws) this.ws.close();
    this.term.dispose();
    this.root.remove();
  }
}
