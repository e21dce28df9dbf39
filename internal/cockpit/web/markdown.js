// A tiny Markdown renderer for the handoff: headings, lists, fenced and
// indented code, paragraphs, and inline `code`, **bold** and _emphasis_.
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
    if (/^\s*(---+|\*\*\*+)\s*$/.test(line)) { flush(); frag.appendChild(el('hr')); continue; }
    list = null;
    if (!para) { para = el('p'); frag.appendChild(para); } else para.appendChild(document.createTextNode(' '));
    inline(para, line.trim());
  }
  return frag;
}
