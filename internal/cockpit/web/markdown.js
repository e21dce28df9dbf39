// A tiny Markdown renderer for the handoff: headings, lists, tables, fenced
// and indented code, paragraphs, and inline `code`, **bold** and _emphasis_.
// It builds DOM nodes and sets only textContent: no HTML in the source is
// ever interpreted, so an untrusted handoff cannot inject markup.

function el(tag, text) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  return e;
}

// inline appends text to parent, turning `code`, **bold** and *em*/_em_
// into elements.
export function inline(parent, text) {
  const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*|_[^_\s][^_]*_)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
    const t = m[0];
    if (t[0] === '`') parent.appendChild(el('code', t.slice(1, -1)));
    else if (t.startsWith('**')) parent.appendChild(el('strong', t.slice(2, -2)));
    else parent.appendChild(el('em', t.slice(1, -1)));
    last = m.index + t.length;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}

// cells splits a table row into its cells: outer pipes dropped, `\|` a
// pipe inside a cell (as journal/report's Cell writes it).
export function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const out = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
    if (s[i] === '|') { out.push(cur.trim()); cur = ''; continue; }
    cur += s[i];
  }
  out.push(cur.trim());
  return out;
}

// A table is a header row, a delimiter row (| --- | :---: | ---: |) with
// as many cells, and the rows up to the first line without a pipe.
const DELIM_CELL = /^:?-{1,}:?$/;
function isDelimiter(line, n) {
  if (!line || !line.includes('|')) return false;
  const cs = cells(line);
  return cs.length === n && cs.every((c) => DELIM_CELL.test(c));
}

function table(head, delim, rows) {
  const align = cells(delim).map((c) => (c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : c.startsWith(':') ? 'left' : ''));
  const t = el('table');
  const row = (parent, tag, cs) => {
    const tr = el('tr');
    align.forEach((a, i) => {
      const c = el(tag);
      if (a) c.style.textAlign = a;
      inline(c, cs[i] || '');
      tr.appendChild(c);
    });
    parent.appendChild(tr);
  };
  const thead = el('thead');
  row(thead, 'th', cells(head));
  const tbody = el('tbody');
  for (const r of rows) row(tbody, 'td', cells(r));
  t.append(thead, tbody);
  return t;
}

export function render(md) {
  const frag = document.createDocumentFragment();
  const lines = String(md || '').replace(/\r\n?/g, '\n').split('\n');
  let para = null;
  let list = null;
  const flush = () => { para = null; list = null; };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)/);
    if (fence) {
      flush();
      const code = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) code.push(lines[i]);
      const pre = el('pre');
      pre.appendChild(el('code', code.join('\n')));
      frag.appendChild(pre);
      continue;
    }
    if (/^\s*$/.test(line)) { flush(); continue; }
    const h = line.match(/^(#{1,6})\s+(.*)$/);
    if (h) {
      flush();
      const e = el('h' + Math.min(6, h[1].length + 2));
      inline(e, h[2]);
      frag.appendChild(e);
      continue;
    }
    const li = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (li) {
      para = null;
      const ordered = /\d/.test(li[1]);
      if (!list || (list.tagName === 'OL') !== ordered) {
        list = el(ordered ? 'ol' : 'ul');
        frag.appendChild(list);
      }
      const item = el('li');
      inline(item, li[2]);
      list.appendChild(item);
      continue;
    }
    if (/^( {4}|\t)/.test(line) && !para && !list) {
      const code = [line.replace(/^( {4}|\t)/, '')];
      while (i + 1 < lines.length && /^( {4}|\t)/.test(lines[i + 1])) code.push(lines[++i].replace(/^( {4}|\t)/, ''));
      const pre = el('pre');
      pre.appendChild(el('code', code.join('\n')));
      frag.appendChild(pre);
      continue;
    }
    if (line.includes('|') && isDelimiter(lines[i + 1], cells(line).length)) {
      flush();
      const head = line;
      const delim = lines[++i];
      const rows = [];
      while (i + 1 < lines.length && lines[i + 1].includes('|') && !/^\s*$/.test(lines[i + 1])) rows.push(lines[++i]);
      const wrap = el('div');
      wrap.className = 'table';
      wrap.appendChild(table(head, delim, rows));
      frag.appendChild(wrap);
      continue;
    }
    if (/^\s*(---+|\*\*\*+)\s*$/.test(line)) { flush(); frag.appendChild(el('hr')); continue; }
    list = null;
    if (!para) { para = el('p'); frag.appendChild(para); } else para.appendChild(document.createTextNode(' '));
    inline(para, line.trim());
  }
  return frag;
}
