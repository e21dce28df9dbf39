// The cockpit page: panes from /ui/api/status, the ledger timeline from
// /ui/ws, compose, search, obligations, background slots and the handoff.
// Every untrusted string reaches the DOM through textContent.
import { Hub } from './hub.js';
import { PaneView } from './term.js';
import { render as renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);
const phone = matchMedia('(max-width: 700px)').matches;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function age(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  return Math.floor(s / 3600) + 'h' + String(Math.floor((s % 3600) / 60)).padStart(2, '0');
}

function setOptions(select, values, keepFirst) {
  const cur = select.value;
  const want = [...(keepFirst ? [select.options[0]] : [])].map((o) => o.value).concat(values);
  const have = [...select.options].map((o) => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const first = keepFirst ? select.options[0].cloneNode(true) : null;
  select.replaceChildren();
  if (first) select.appendChild(first);
  for (const v of values) { const o = el('option', null, v); o.value = v; select.appendChild(o); }
  if (want.includes(cur)) select.value = cur;
}

// ---- panes -------------------------------------------------------------

const panes = new Map(); // attach name -> PaneView
let focused = null;
let roles = [];

function focusPane(p) {
  focused = focused === p ? null : p;
  for (const v of panes.values()) v.root.classList.toggle('focused', v === focused);
  $('panes').classList.toggle('focus-mode', !!focused);
  $('unfocus').hidden = !focused;
  requestAnimationFrame(() => {
    for (const v of panes.values()) v.refit();
    if (focused) focused.term.focus();
  });
}
$('unfocus').onclick = () => focused && focusPane(focused);

function applyCols() {
  const v = $('cols').value;
  $('panes').style.gridTemplateColumns = v === 'auto' ? '' : `repeat(${v}, minmax(0, 1fr))`;
  requestAnimationFrame(() => { for (const p of panes.values()) p.refit(); });
}
$('cols').onchange = applyCols;

// The split between the panes and the side column.
(() => {
  const split = $('split');
  split.addEventListener('pointerdown', (e) => {
    split.setPointerCapture(e.pointerId);
    const move = (ev) => {
      const w = Math.min(Math.max(window.innerWidth - ev.clientX, 260), window.innerWidth - 320);
      $('main').style.setProperty('--side', w + 'px');
    };
    const up = () => {
      split.removeEventListener('pointermove', move);
      split.removeEventListener('pointerup', up);
      for (const p of panes.values()) p.refit();
    };
    split.addEventListener('pointermove', move);
    split.addEventListener('pointerup', up);
  });
})();

function paneList(st) {
  const out = [];
  const seen = new Set();
  for (const p of st.panes || []) {
    out.push({ name: p.role, ...p });
    seen.add(p.paneId);
  }
  for (const s of st.slots || []) {
    if (seen.has(s.paneId)) continue;
    out.push({ name: s.alias, role: s.alias, paneId: s.paneId, command: s.command, state: s.state || s.status, queued: s.queued });
  }
  return out;
}

// remoteList is the roles other hubs host (docs/protocol.md §16), from
// their presence: the status's federation.remotePanes, without a role
// this hub shows as a pane of its own.
function remoteList(st, local) {
  const names = new Set(local.map((p) => p.name));
  return ((st.federation && st.federation.remotePanes) || []).filter((r) => r.role && !names.has(r.role));
}

// RemoteCard is a role another hub hosts: no terminal (it runs on another
// machine), its hub, its state and when that hub's presence was last seen.
class RemoteCard {
  constructor(role) {
    this.root = el('article', 'pane remote');
    this.root.dataset.role = role;
    this.root.dataset.remote = 'true';
    const head = el('header', 'pane-head');
    this.stateEl = el('span', 'badge state', '');
    this.seenEl = el('span', 'seen', '');
    head.append(el('strong', 'role', role), el('span', 'badge remote', 'remote'), this.stateEl, el('span', 'spacer'), this.seenEl);
    this.hubEl = el('strong', 'hub', '');
    const body = el('div', 'pane-body remote-body');
    body.append(el('span', null, 'hosted by hub '), this.hubEl,
      el('p', 'note', 'Its terminal is on that machine; messages to it are forwarded through NATS.'));
    this.root.append(head, body);
  }

  update(r) {
    const state = r.state || 'unknown';
    this.stateEl.textContent = state;
    this.stateEl.dataset.state = state;
    this.root.dataset.state = state;
    this.root.dataset.hub = r.hub || '';
    this.hubEl.textContent = r.hub || '?';
    this.seenEl.textContent = r.lastSeenMs ? 'seen ' + age(r.lastSeenMs) + ' ago' : 'not seen';
    this.seenEl.title = r.lastSeenMs ? new Date(r.lastSeenMs).toLocaleString() : '';
  }
}

const remotes = new Map(); // role -> RemoteCard

function updatePanes(st) {
  const list = paneList(st);
  const names = new Set(list.map((p) => p.name));
  for (const [name, v] of panes) {
    if (!names.has(name)) { if (focused === v) focusPane(v); v.destroy(); panes.delete(name); }
  }
  for (const p of list) {
    let v = panes.get(p.name);
    if (!v) {
      v = new PaneView(p.name, { readOnly: phone, onFocus: focusPane });
      panes.set(p.name, v);
      $('panes').appendChild(v.root);
      v.update(p); // its size first: a read-only view attaches at the pane's width
      v.mount();
    }
    v.update(p);
  }
  const far = remoteList(st, list);
  const farNames = new Set(far.map((r) => r.role));
  for (const [role, c] of remotes) {
    if (!farNames.has(role)) { c.root.remove(); remotes.delete(role); }
  }
  for (const r of far) {
    let c = remotes.get(r.role);
    if (!c) {
      c = new RemoteCard(r.role);
      remotes.set(r.role, c);
      $('panes').appendChild(c.root);
    }
    c.update(r);
  }
}

// ---- status, login, hub state ---------------------------------------------

function setBadge(id, text, state) {
  const b = $(id);
  b.textContent = text;
  b.dataset.state = state;
}

let lastStatus = null;
let statusSeen;
const firstStatus = new Promise((resolve) => { statusSeen = resolve; });
async function pollStatus() {
  try {
    const r = await fetch('/ui/api/status', { cache: 'no-store' });
    if (r.status === 401) {
      setBadge('login', 'logged out: run `hm ui` for a new link', 'exited');
      setBadge('hubstate', 'hub up', 'ready');
      return;
    }
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const st = await r.json();
    lastStatus = st;
    setBadge('login', 'operator (signed in)', 'ready');
    const h = st.hub || {};
    $('session').textContent = h.sessionId || ('session ' + (h.session ?? '?'));
    $('session').title = (h.root || '') + (h.version ? ' · hm ' + h.version : '');
    const ledgerOK = !st.ledger || st.ledger.ok;
    setBadge('hubstate', ledgerOK ? `hub up · ${age(Date.now() - (h.uptimeMs || 0))}` : 'ledger: ' + st.ledger.error,
      ledgerOK ? 'ready' : 'exited');
    updatePanes(st);
    const local = paneList(st);
    // Messages to a remote role are forwarded to its hub: it is a target too.
    roles = local.map((p) => p.name).concat(remoteList(st, local).map((r) => r.role));
    setOptions($('target'), ['all', ...roles], false);
    setOptions($('rolefilter'), ['user', ...roles], true);
    renderSlots(st.slots || []);
    markStuck(st.stuck || []);
    renderObligations(st.obligations || [], h.sessionId);
    takeNotifications(st.notifications || []);
    statusSeen();
  } catch (e) {
    setBadge('hubstate', 'hub unreachable (' + e.message + ')', 'exited');
  }
}

// ---- timeline ----------------------------------------------------------

const MAX_SHOWN = 400; // the newest matching messages kept in the DOM
const msgs = new Map(); // messageId -> model
const order = []; // messageIds, oldest first

// insertOrdered keeps order sorted by commit time (live events arrive in
// order; a backfill may bring older ones).
function insertOrdered(m) {
  let lo = 0;
  let hi = order.length;
  if (!hi || msgs.get(order[hi - 1]).at <= m.at) { order.push(m.id); return; }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (msgs.get(order[mid]).at <= m.at) lo = mid + 1; else hi = mid;
  }
  order.splice(lo, 0, m.id);
}

function stageOf(m) { return m.ack_status || m.status || ''; }

// The page's vocabulary, from the hub (GET /ui/api/words; cockpit.Words):
// the delivery stages in plain words and in rank order (internal/ground/status),
// the failed status, the priority tags compose offers and the hub's own
// role (roles). The page restates none of it; until it arrives a stage
// shows its own name in the order it came.
const WORDS = new Map(); // stage -> {words, toVerify, delivered, needsPerson}
const RANK = new Map(); // stage -> its place in a message's path
let VOCAB = { failed: null, tags: [], system: null };
async function loadWords() {
  try {
    const r = await fetch('/ui/api/words', { cache: 'no-store' });
    if (!r.ok) return;
    const w = await r.json();
    (w.stages || []).forEach((st, i) => { WORDS.set(st.stage, st); RANK.set(st.stage, i); });
    VOCAB = { failed: w.failed || null, tags: w.tags || [], system: w.system || null };
    composeTags();
    for (const m of msgs.values()) if (m.el) renderMsg(m);
  } catch { /* the stage names stay */ }
}

const stageWord = (s) => WORDS.get(s) || {};
const isFailed = (m) => !!VOCAB.failed && m.status === VOCAB.failed;
const isSystem = (m) => !!VOCAB.system && m.from === VOCAB.system;

// pathOf is the stages a message reached, in the hub's rank order ("" is
// committed, not yet handed over: "queued").
function pathOf(m) {
  const rank = (s) => (RANK.has(s) ? RANK.get(s) : RANK.size);
  return [...m.stages].sort((a, b) => rank(a) - rank(b));
}

function mergeRow(r) {
  if (!r.message_id) return null;
  let m = msgs.get(r.message_id);
  if (!m) {
    m = { id: r.message_id, stages: new Set(), events: new Set(), at: r.brokered_at_ms || r.at_ms || 0 };
    msgs.set(r.message_id, m);
    insertOrdered(m);
  }
  if (r.event_id) {
    if (m.events.has(r.event_id)) return m; // a replay after a reconnect
    m.events.add(r.event_id);
  }
  Object.assign(m, {
    header: r.header, seq: r.seq, from: r.sender_role, to: r.target_role, priority: r.priority,
    body: r.raw_body, status: r.status, ack_status: r.ack_status, error_code: r.error_code,
    at: r.brokered_at_ms || r.at_ms || m.at, channel: r.channel, tags: r.tags || [],
  });
  m.stages.add(r.ack_status || '');
  return m;
}

// mergeView takes a query's MessageView (camelCase) into the model.
// Every message in the ledger was committed: its path starts queued.
function mergeView(v) {
  const m = mergeRow({
    message_id: v.messageId, header: v.header, seq: v.seq, sender_role: v.from, target_role: v.to,
    priority: v.priority, raw_body: v.body || v.snippet, status: v.status, ack_status: v.ackStatus,
    error_code: v.errorCode, brokered_at_ms: v.atMs, channel: v.channel, tags: v.tags,
  });
  if (m) m.stages.add('');
  return m;
}

function visible(m) {
  const f = $('rolefilter').value;
  return !f || m.from === f || m.to === f;
}

function renderMsg(m) {
  const li = m.el || el('li', 'msg');
  m.el = li;
  li.dataset.id = m.id;
  li.dataset.stage = stageOf(m);
  li.dataset.status = m.status || '';
  li.classList.toggle('alarm', isFailed(m) || !!stageWord(m.ack_status).needsPerson || !!m.stuck);
  li.classList.toggle('delivered', !!stageWord(m.ack_status).delivered);
  const head = el('div', 'mhead');
  head.appendChild(el('strong', 'ref', (m.header || (m.from || '?').toUpperCase()) + (m.seq ? ' #' + m.seq : '')));
  head.appendChild(el('span', 'route', (m.from || '?') + ' → ' + (m.to || '?')));
  for (const t of m.tags || []) head.appendChild(el('span', 'tag', t)); // the hub's (roles.ShownTags)
  head.appendChild(el('span', 'time', m.at ? new Date(m.at).toLocaleTimeString() : ''));
  const steps = el('div', 'path');
  let shown = null;
  const step = (text, cls, title) => {
    if (text === shown) return; // committed and accepted.unverified are both "queued"
    if (shown !== null) steps.appendChild(el('span', 'arrow', '→'));
    shown = text;
    const span = el('span', 'stage ' + cls, text);
    span.title = title; // the protocol's name
    steps.appendChild(span);
  };
  for (const s of pathOf(m)) {
    const w = stageWord(s);
    step(w.words || s, w.needsPerson ? 'bad' : w.delivered ? 'good' : '', s);
  }
  if (isFailed(m)) step(m.status + (m.error_code ? ': ' + m.error_code : ''), 'bad', m.status);
  if (m.stuck) steps.appendChild(el('span', 'stage bad', 'stuck: ' + m.stuck));
  const toVerify = !isFailed(m) && stageWord(m.ack_status || '').toVerify;
  if (toVerify) steps.appendChild(el('span', 'verify', toVerify));
  // The hub's own messages (the startup briefings, notices) fold to one
  // line until clicked.
  const folded = isSystem(m) && !m.open;
  li.classList.toggle('folded', folded);
  li.title = folded ? 'click to open' : '';
  const text = m.body || '';
  const body = el('div', 'mbody', folded ? text.replace(/\s+/g, ' ').slice(0, 300) : text.slice(0, 600));
  li.replaceChildren(head, steps, body);
  return li;
}

// Rendering is batched per task (a microtask after the frames at hand), not
// per animation frame: the commit-to-DOM latency is a benchmarked number.
let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  queueMicrotask(renderTimeline);
}

// renderTimeline shows the newest MAX_SHOWN messages that pass the filter,
// newest first; older ones stay in the model only (a bounded list, so
// 10,000 messages cost the DOM no more than 400).
function renderTimeline() {
  renderQueued = false;
  const list = $('timeline');
  const shown = [];
  let hidden = 0;
  for (let i = order.length - 1; i >= 0; i--) {
    const m = msgs.get(order[i]);
    if (!visible(m)) continue;
    if (shown.length >= MAX_SHOWN) { hidden += i + 1; break; }
    shown.push(m);
  }
  const want = shown.map((m) => (m.dirty || !m.el ? renderMsg(m) : m.el));
  shown.forEach((m) => { m.dirty = false; });
  const more = $('timelinemore');
  more.hidden = !hidden;
  more.textContent = hidden ? hidden + ' older messages not shown (search or filter to find them)' : '';
  const cur = list.children;
  // Fast path: only new messages on top (the usual case).
  const k = want.indexOf(cur[0]);
  if (k > 0 && cur.length >= want.length - k) {
    let same = true;
    for (let i = 0; i < want.length - k && same; i++) same = cur[i] === want[k + i];
    if (same) {
      list.prepend(...want.slice(0, k));
      while (list.children.length > want.length) list.lastChild.remove();
      return;
    }
  }
  if (cur.length !== want.length || want.some((w, i) => cur[i] !== w)) list.replaceChildren(...want);
}

function onEvent(r) {
  const m = mergeRow(r);
  if (!m) return;
  m.dirty = true;
  // Render this one now (in place when shown): the latency from commit to
  // DOM is a benchmarked number.
  if (m.el && m.el.isConnected) { renderMsg(m); m.dirty = false; } else scheduleRender();
}

function markStuck(stuck) {
  for (const s of stuck) {
    const m = msgs.get(s.messageId) || mergeRow({ message_id: s.messageId, sender_role: s.from, target_role: s.to, header: s.header, seq: s.seq, brokered_at_ms: s.atMs });
    if (m.stuck !== s.reason) { m.stuck = s.reason || '?'; m.dirty = true; scheduleRender(); }
  }
}

$('rolefilter').onchange = scheduleRender;
$('timeline').addEventListener('click', (e) => {
  const li = e.target.closest('li.msg');
  if (!li) return;
  const m = msgs.get(li.dataset.id);
  if (m && li.classList.contains('folded')) { m.open = true; renderMsg(m); return; }
  showDetail(li.dataset.id);
});

// Backfill: the messages each member (and the person) received this
// session, so a page opened late, or reconnected, shows them; merged by
// messageId and event, so nothing shows twice.
async function backfill() {
  for (const role of ['user', ...roles]) {
    try {
      const res = await hub.query('inbox', { role, unreadOnly: false, limit: 200, includeBodies: true });
      for (const v of res.messages || []) { const m = mergeView(v); if (m) m.dirty = true; }
    } catch { /* a role the hub does not know (yet) */ }
  }
  scheduleRender();
}

// ---- details -------------------------------------------------------------

async function showDetail(id) {
  const d = $('detail');
  d.hidden = false;
  d.replaceChildren(el('p', null, 'loading ' + id + '…'));
  const close = el('button', 'close', '×');
  close.type = 'button';
  close.onclick = () => { d.hidden = true; };
  const parts = [close, el('h3', null, 'Message ' + id)];
  try {
    const [got, tl, ver] = await Promise.all([
      hub.query('get', { messageIds: [id] }),
      hub.query('timeline', { messageId: id, before: 3, after: 3 }).catch(() => null),
      fetch('/ui/api/verify?id=' + encodeURIComponent(id), { cache: 'no-store' }).then((r) => r.json()).catch((e) => ({ problem: e.message })),
    ]);
    const m = (got.messages || [])[0];
    if (m) {
      parts.push(el('p', 'route', `${m.ref || m.header + ' #' + m.seq} · ${m.from} → ${m.to} · ${m.status}${m.ackStatus ? ' / ' + m.ackStatus : ''}${m.errorCode ? ' · ' + m.errorCode : ''}`));
      parts.push(el('pre', 'body', m.body || ''));
      if (m.obligation) parts.push(el('p', null, `obligation: ${m.obligation.owner} owes ${m.obligation.requester} (${m.obligation.open ? 'open' : 'closed by ' + (m.obligation.closedBy || '?')})`));
    } else {
      parts.push(el('p', 'bad', 'not found'));
    }
    const chain = el('p', 'chain ' + (ver.ok ? 'good' : 'bad'));
    chain.textContent = ver.ok ? `hash chain verified (${ver.rows} rows)` + (ver.chainOk === false ? ', but this message\'s events do not link' : ver.chainOk ? ', this message\'s events link' : '') : 'hash chain: ' + (ver.problem || 'not verified');
    chain.dataset.ok = String(!!ver.ok && ver.chainOk !== false);
    parts.push(chain);
    const evs = el('ol', 'events');
    const list = (ver.events && ver.events.length ? ver.events : (m && m.events) || []);
    for (const ev of list) {
      const ms = ev.at || ev.atMs;
      const at = ms ? new Date(ms).toLocaleTimeString() : '';
      const detail = ev.detail == null ? '' : typeof ev.detail === 'string' ? ev.detail : JSON.stringify(ev.detail);
      const li = el('li', null, `${at} ${ev.event}${detail ? ' ' + detail : ''}`);
      if (ev.hash) li.title = 'hash ' + ev.hash;
      evs.appendChild(li);
    }
    parts.push(el('h4', null, 'Events'), evs);
    if (tl && tl.messages) {
      const around = el('ol', 'around');
      for (const v of tl.messages) {
        const li = el('li', v.messageId === id ? 'self' : null, `${v.ref || v.header + ' #' + v.seq} ${v.from} → ${v.to}: ${v.snippet || ''}`);
        li.dataset.id = v.messageId;
        around.appendChild(li);
      }
      around.onclick = (e) => { const li = e.target.closest('li'); if (li && li.dataset.id !== id) showDetail(li.dataset.id); };
      parts.push(el('h4', null, 'Around it'), around);
    }
  } catch (e) {
    parts.push(el('p', 'bad', e.message));
  }
  d.replaceChildren(...parts);
}

// ---- search --------------------------------------------------------------

// highlighted renders a search snippet: the hub marks the matching words
// with [brackets]; a bracketed part that holds none of the query's words
// (a priority tag in the body) stays plain text.
function highlighted(snippet, query) {
  const terms = String(query).toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter((w) => w && !['and', 'or', 'not', 'near'].includes(w));
  const frag = document.createDocumentFragment();
  const parts = String(snippet || '').split(/\[([^\]]*)\]/);
  parts.forEach((p, i) => {
    const hit = i % 2 === 1 && terms.some((t) => p.toLowerCase().includes(t));
    frag.appendChild(hit ? el('mark', null, p) : document.createTextNode(i % 2 ? '[' + p + ']' : p));
  });
  return frag;
}

$('searchform').onsubmit = async (e) => {
  e.preventDefault();
  const q = $('search').value.trim();
  const box = $('searchresults');
  if (!q) { box.hidden = true; return; }
  box.hidden = false;
  box.replaceChildren(el('p', null, 'searching…'));
  try {
    const res = await hub.query('search', { query: q, limit: 50 });
    const ol = el('ol', 'hits');
    for (const h of res.hits || []) {
      const li = el('li', 'hit');
      li.dataset.id = h.messageId;
      li.appendChild(el('strong', null, (h.ref || h.header + ' #' + h.seq) + ' '));
      li.appendChild(el('span', 'route', h.from + ' → ' + h.to + ' '));
      const sn = el('span', 'snippet');
      sn.appendChild(highlighted(h.snippet, q));
      li.appendChild(sn);
      li.onclick = () => showDetail(h.messageId);
      ol.appendChild(li);
    }
    const close = el('button', 'close', '×');
    close.type = 'button';
    close.onclick = () => { box.hidden = true; };
    box.replaceChildren(close, el('p', 'count', (res.hits || []).length + ' hits for ' + q), ol);
  } catch (err) {
    box.replaceChildren(el('p', 'bad', err.message));
  }
};

// ---- compose -------------------------------------------------------------

$('composeform').onsubmit = async (e) => {
  e.preventDefault();
  const body = $('body').value.trim();
  const out = $('sendresult');
  if (!body) return;
  // The chosen tag starts the message; the hub reads the priority and
  // the obligation from it (roles.Priority, roles.HasTag).
  const tag = $('priority').value;
  out.textContent = 'sending…';
  out.className = '';
  try {
    const ack = await hub.send({ target: $('target').value, content: (tag ? tag + ' ' : '') + body });
    out.dataset.id = ack.messageId;
    out.dataset.status = ack.status || '';
    out.className = ack.ok ? 'good' : 'bad';
    out.textContent = ack.ok
      ? `${ack.header} #${ack.seq} → ${ack.target || ack.targets?.join(', ') || $('target').value}: ${ack.status}${ack.warnings?.length ? ' (' + ack.warnings.join(', ') + ')' : ''}`
      : `refused: ${ack.status}${ack.reason ? ' — ' + ack.reason : ''}`;
    if (ack.ok) $('body').value = '';
    if (ack.ok && tag) pollStatus(); // an obligation it may have opened
  } catch (err) {
    out.className = 'bad';
    out.textContent = err.message;
  }
};
// composeTags offers the hub's priority tags (roles.PriorityTags).
function composeTags() {
  const sel = $('priority');
  const cur = sel.value;
  const opts = [el('option', null, 'no tag')].concat(VOCAB.tags.map((t) => el('option', null, t)));
  opts[0].value = '';
  VOCAB.tags.forEach((t, i) => { opts[i + 1].value = t; });
  sel.replaceChildren(...opts);
  sel.value = VOCAB.tags.includes(cur) ? cur : '';
}

$('body').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('composeform').requestSubmit();
});

// ---- notifications -------------------------------------------------------
// The hub decides what deserves telling the person (internal/notify) and
// lists what it told in its status. Here: an unread count in the title and
// on the bell, and a browser Notification per event where the person
// allowed it, each once per browser (keys kept in localStorage, so a
// reload or a hub restart does not repeat one).

const NOTES_READ = 'hm.notes.read';
const NOTES_SHOWN = 'hm.notes.shown';
const NOTES_KEEP = 500; // keys remembered per list
const baseTitle = document.title;
const loadKeys = (name) => { try { return new Set(JSON.parse(localStorage.getItem(name) || '[]')); } catch { return new Set(); } };
const saveKeys = (name, set) => { try { localStorage.setItem(name, JSON.stringify([...set].slice(-NOTES_KEEP))); } catch { /* private mode */ } };
const notesRead = loadKeys(NOTES_READ);
const notesShown = loadKeys(NOTES_SHOWN);
let notesFirst = true; // the first status after the page opened
let notesLast = [];

function takeNotifications(list) {
  notesLast = list;
  const fresh = list.filter((ev) => !notesShown.has(ev.key));
  for (const ev of fresh) {
    notesShown.add(ev.key);
    // What was told before the page opened is counted, not popped up.
    if (!notesFirst && window.Notification && Notification.permission === 'granted') {
      try { new Notification(ev.title, { body: ev.body, tag: ev.key }); } catch { /* not allowed here */ }
    }
  }
  if (fresh.length) saveKeys(NOTES_SHOWN, notesShown);
  notesFirst = false;
  renderUnread();
}

function renderUnread() {
  const unread = notesLast.filter((ev) => !notesRead.has(ev.key));
  document.title = unread.length ? `(${unread.length}) ${baseTitle}` : baseTitle;
  const b = $('notes');
  b.textContent = '🔔 ' + unread.length;
  b.dataset.unread = String(unread.length);
  b.title = unread.length ? unread.map((ev) => ev.line).join('\n') : 'notifications: none unread';
}

// markNotesRead: the person looked (clicked the bell, or came back to the tab).
function markNotesRead() {
  for (const ev of notesLast) notesRead.add(ev.key);
  saveKeys(NOTES_READ, notesRead);
  renderUnread();
}
$('notes').onclick = markNotesRead;
window.addEventListener('focus', markNotesRead);
document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') markNotesRead(); });

function offerNotificationPermission() {
  const btn = $('notifyperm');
  btn.hidden = !(window.Notification && Notification.permission === 'default');
  btn.onclick = async () => {
    try { await Notification.requestPermission(); } catch { /* refused */ }
    offerNotificationPermission();
  };
}
offerNotificationPermission();

// ---- obligations, slots, handoff -------------------------------------------

// renderObligations lists the open obligations of hm status (the hub's
// one query: this session's and the previous session's).
function renderObligations(obs, sessionId) {
  const ul = $('obllist');
  const items = obs.map((o) => {
    const from = o.sessionId && o.sessionId !== sessionId ? ` · from ${o.sessionId}` : '';
    const li = el('li', Date.now() - o.openedAtMs > 10 * 60e3 ? 'old' : null, `${o.owner} owes ${o.requester} an answer to ${o.ref} · ${age(o.openedAtMs)}${from}`);
    li.dataset.id = o.messageId;
    li.onclick = () => showDetail(o.messageId);
    return li;
  });
  ul.replaceChildren(...(items.length ? items : [el('li', 'none', 'none open')]));
}

function renderSlots(slots) {
  const ul = $('slotlist');
  const items = slots.map((s) => {
    const li = el('li');
    li.append(el('strong', null, s.alias + ' '), el('span', 'badge state', s.status), el('span', null, ` ${s.command || ''} · ${age(s.createdAtMs)} `));
    li.querySelector('.badge').dataset.state = s.status;
    const kill = el('button', null, 'kill');
    kill.type = 'button';
    kill.onclick = async () => {
      try {
        const r = await hub.background('kill', { target: s.alias });
        $('slotresult').textContent = r.ok ? 'killed ' + s.alias : 'refused: ' + (r.result?.status || r.result?.error || '?');
      } catch (e) { $('slotresult').textContent = e.message; }
    };
    li.appendChild(kill);
    return li;
  });
  const key = JSON.stringify(slots.map((s) => [s.alias, s.status, s.command]));
  if (ul.dataset.key === key) return;
  ul.dataset.key = key;
  ul.replaceChildren(...(items.length ? items : [el('li', 'none', 'no background agents')]));
}

$('spawnform').onsubmit = async (e) => {
  e.preventDefault();
  const task = $('spawntask').value.trim();
  try {
    const r = await hub.background('spawn', task ? { task } : {});
    const res = r.result || {};
    $('slotresult').textContent = r.ok ? `spawned ${res.alias} (${res.status})` : 'refused: ' + (res.status || '') + (res.error ? ' — ' + res.error : '');
    if (r.ok) $('spawntask').value = '';
  } catch (err) { $('slotresult').textContent = err.message; }
};

async function loadHandoff() {
  try {
    const r = await fetch('/ui/api/handoff', { cache: 'no-store' });
    if (!r.ok) return;
    const h = await r.json();
    $('handoffpath').textContent = h.path || '';
    const body = $('handoffbody');
    if (body.dataset.src === h.markdown) return;
    body.dataset.src = h.markdown || '';
    body.replaceChildren(h.markdown ? renderMarkdown(h.markdown) : el('p', 'none', 'no handoff yet'));
  } catch { /* keep the last one */ }
}

// ---- start ---------------------------------------------------------------

const hub = new Hub({
  onEvent,
  onState: (s) => { document.body.dataset.hub = s; if (s !== 'connected') setBadge('login', 'messages: ' + s, s === 'unauthorized' ? 'exited' : 'starting'); },
  onOpen: () => firstStatus.then(() => { backfill(); }),
});
window.hmCockpit = { hub, panes, remotes, msgs, onEvent, loadHandoff }; // for the browser tests and the curious

applyCols();
loadWords();
await pollStatus();
setInterval(pollStatus, 1000);
loadHandoff();
setInterval(loadHandoff, 30000);
