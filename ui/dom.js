// dom: a small element builder. Text always goes in as text (never parsed as HTML), so
// nothing the API returns can inject markup or script.
const SVG = 'http://www.w3.org/2000/svg';

function build(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of kids.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function h(tag, attrs, ...kids) {
  return build(document.createElement(tag), attrs, kids);
}

export function s(tag, attrs, ...kids) {
  return build(document.createElementNS(SVG, tag), attrs, kids);
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtAge(ms) {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7200000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

// A table from rows and columns [{title, get(row) -> node|text, cls}].
export function table(cols, rows, caption) {
  return h('div', { class: 'scroll' },
    h('table', {},
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col', class: c.cls }, c.title)))),
      h('tbody', {}, rows.length
        ? rows.map(r => h('tr', {}, cols.map(c => h('td', { class: c.cls }, c.get(r)))))
        : h('tr', {}, h('td', { colspan: cols.length, class: 'empty' }, 'nothing here')))));
}

export function badge(status) {
  return h('span', { class: `badge st-${status}` }, status || '?');
}

// Append kids (arrays flattened; null, undefined and false left out) to el; returns el.
export function add(el, ...kids) {
  return build(el, {}, kids);
}

// Replace el's content by kids.
export function fill(el, ...kids) {
  return add(clear(el), ...kids);
}
