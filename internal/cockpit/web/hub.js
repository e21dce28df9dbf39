// The cockpit's connection to the broker at /ui/ws: the hm/1 protocol
// (docs/protocol.md "Frames"), pre-authenticated as the operator by the
// session cookie. It registers as `user`, subscribes to the journal, and
// reconnects with a growing delay when the hub goes away.

export function wsURL(path) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return proto + '//' + location.host + path;
}

export class Hub {
  constructor({ onEvent, onState, onOpen }) {
    this.onEvent = onEvent || (() => {});
    this.onState = onState || (() => {});
    this.onOpen = onOpen || (() => {});
    this.pending = new Map(); // requestId or messageId -> {resolve, reject, timer}
    this.seq = 0;
    this.delay = 500;
    this.ws = null;
    this.ready = false;
    this.connect();
  }

  connect() {
    this.onState('connecting');
    let ws;
    try {
      ws = new WebSocket(wsURL('/ui/ws'));
    } catch (e) {
      this.onState('error: ' + e.message);
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: 'register', role: 'user', listen: false }));
    };
    ws.onmessage = (e) => {
      let f;
      try { f = JSON.parse(e.data); } catch { return; }
      this.frame(f);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ready = false;
      this.onState('disconnected');
      for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(new Error('connection closed')); }
      this.pending.clear();
      this.retry();
    };
  }

  retry() {
    setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  }

  frame(f) {
    switch (f.type) {
      case 'registered':
        this.ready = true;
        this.delay = 500;
        this.ws.send(JSON.stringify({ type: 'subscribe', topics: ['journal'] }));
        this.onState('connected');
        this.onOpen();
        return;
      case 'journal-event':
        if (f.row) this.onEvent(f.row);
        return;
      case 'send-ack': {
        const p = this.take(f.requestId) || this.take(f.messageId);
        if (p) p.resolve(f);
        return;
      }
      case 'response': case 'health-check-result': case 'delivery-check-result': case 'heartbeat-ack': {
        const p = this.take(f.requestId);
        if (p) p.resolve(f);
        return;
      }
      case 'error': {
        const p = this.take(f.requestId) || this.take(f.messageId);
        if (p) { p.reject(new Error((f.code || 'error') + (f.message ? ': ' + f.message : ''))); return; }
        if (f.code === 'unauthorized') this.onState('unauthorized');
        return;
      }
    }
  }

  take(id) {
    if (!id || !this.pending.has(id)) return null;
    const p = this.pending.get(id);
    this.pending.delete(id);
    clearTimeout(p.timer);
    return p;
  }

  nextId(prefix) {
    this.seq += 1;
    return prefix + '-' + Date.now().toString(36) + '-' + this.seq;
  }

  // request sends frame and resolves with the answer that carries key
  // (its requestId, or for send its messageId).
  request(frame, key, timeoutMs = 15000) {
    return new Promise((resolve, reject) => {
      if (!this.ready) { reject(new Error('not connected to the hub')); return; }
      const timer = setTimeout(() => { this.pending.delete(key); reject(new Error('no answer within ' + timeoutMs + ' ms')); }, timeoutMs);
      this.pending.set(key, { resolve, reject, timer });
      this.ws.send(JSON.stringify(frame));
    });
  }

  async query(op, payload) {
    const requestId = this.nextId('q');
    const f = await this.request({ type: 'query', op, payload, requestId }, requestId);
    return f.result;
  }

  send({ target, content, priority, ackRequired }) {
    const messageId = this.nextId('ui');
    const frame = { type: 'send', target, content, messageId, priority };
    if (ackRequired) frame.ackRequired = true;
    return this.request(frame, messageId).then((ack) => ({ ...ack, messageId: ack.messageId || messageId }));
  }

  async background(action, payload) {
    const requestId = this.nextId('bg');
    return this.request({ type: 'background-agent', action, payload: payload || {}, requestId }, requestId);
  }
}
