// job: one job, live. Progress, the task DAG coloured by state with the critical path
// marked, the reason each waiting task waits (hover or focus a task), failed tasks, the
// rollback plan. Small plans are drawn whole (one SVG box per task, at most GRAPH_MAX);
// large ones are grouped by service and action or by node, groups expand on demand and
// show at most PAGE tasks at a time, so a 140,000-task job never has more than a few
// hundred elements. Updates: the job is polled while it runs (summary every second, the
// tasks every 1.5 s, slower for large jobs), and elements are updated in place.
import { h, s, clear, add, fill, badge, fmtTime } from './dom.js';
import { get, post } from './api.js';

const GRAPH_MAX = 300; // tasks of one phase drawn as a graph
const GROUPS_SHOWN = 60;
const PAGE = 200;
const FINAL = ['succeeded', 'rolled-back', 'cancelled', 'failed', 'needs-operator'];
export const STATES = ['waiting', 'pending', 'queued', 'running', 'succeeded', 'failed',
  'failed-dependency', 'skipped', 'cancelled'];
// The stacked bars read left to right from done to not started, failures last.
const BAR_ORDER = ['succeeded', 'skipped', 'running', 'queued', 'pending', 'waiting', 'failed',
  'failed-dependency', 'cancelled'];
const GLYPH = { waiting: '…', pending: '○', queued: '◔', running: '▶', succeeded: '✓', failed: '✗',
  'failed-dependency': '⊘', skipped: '–', cancelled: '■' };

const tip = document.getElementById('tip');

function taskText(t) {
  const lines = [`${t.id}`, `status: ${t.status}${t.attempts ? ` · attempts ${t.attempts}` : ''}`];
  if (t.worker) lines.push(`worker: ${t.worker}`);
  if (t.why) lines.push(`why it waits (${t.why.reason}): ${t.why.text}`);
  if (t.started_at) lines.push(`started ${fmtTime(t.started_at)}`);
  if (t.ended_at) lines.push(`ended ${fmtTime(t.ended_at)}`);
  return lines;
}

function showTip(t, el) {
  clear(tip);
  const [first, ...rest] = taskText(t);
  tip.append(h('strong', {}, first), ...rest.map(l => h('div', { class: l.startsWith('why it waits') ? 'why' : '' }, l)));
  tip.hidden = false;
  const r = el.getBoundingClientRect();
  const w = tip.offsetWidth, ht = tip.offsetHeight;
  let x = r.left + window.scrollX, y = r.bottom + window.scrollY + 6;
  if (x + w > window.scrollX + document.documentElement.clientWidth - 8)
    x = window.scrollX + document.documentElement.clientWidth - w - 8;
  if (r.bottom + ht + 6 > window.innerHeight) y = r.top + window.scrollY - ht - 6;
  tip.style.left = `${Math.max(4, x)}px`;
  tip.style.top = `${Math.max(4, y)}px`;
  tip.dataset.task = t.id;
}

function hideTip() { tip.hidden = true; delete tip.dataset.task; }

// Hover and focus show a task's tooltip; el.__task is read at that moment, so updates
// in place need only replace it.
function hoverable(el) {
  el.addEventListener('mouseenter', () => showTip(el.__task, el));
  el.addEventListener('mouseleave', hideTip);
  el.addEventListener('focus', () => showTip(el.__task, el));
  el.addEventListener('blur', hideTip);
  return el;
}

// Depth of each task (longest path from a root) and the critical path: the chain of
// dependencies with the largest total duration (measured where the task ran, else the mean
// of those measured, else 1 each).
export function analyse(tasks) {
  const n = tasks.length;
  const byIdx = new Map(tasks.map((t, i) => [t.idx, i]));
  const deps = tasks.map(t => (t.deps || []).map(d => byIdx.get(d)).filter(d => d !== undefined));
  const dur = tasks.map(t => (t.started_at && t.ended_at) ? Math.max(1, Date.parse(t.ended_at) - Date.parse(t.started_at)) : NaN);
  const known = dur.filter(d => !isNaN(d));
  const mean = known.length ? known.reduce((a, b) => a + b, 0) / known.length : 1;
  // tasks come in the planner's order, which is topological; guard anyway with an order pass
  const order = topo(n, deps);
  const depth = new Array(n).fill(0), best = new Array(n).fill(0), prev = new Array(n).fill(-1);
  for (const i of order) {
    let b = 0, p = -1;
    for (const d of deps[i]) {
      depth[i] = Math.max(depth[i], depth[d] + 1);
      if (best[d] > b) { b = best[d]; p = d; }
    }
    best[i] = b + (isNaN(dur[i]) ? mean : dur[i]);
    prev[i] = p;
  }
  const crit = new Set();
  let end = -1;
  for (let i = 0; i < n; i++) if (end < 0 || best[i] > best[end]) end = i;
  for (let i = end; i >= 0; i = prev[i]) crit.add(i);
  return { deps, depth, crit };
}

function topo(n, deps) {
  const indeg = new Array(n).fill(0), succ = Array.from({ length: n }, () => []);
  deps.forEach((ds, i) => ds.forEach(d => { indeg[i]++; succ[d].push(i); }));
  const q = [], out = [];
  for (let i = 0; i < n; i++) if (!indeg[i]) q.push(i);
  while (q.length) {
    const i = q.pop();
    out.push(i);
    for (const j of succ[i]) if (!--indeg[j]) q.push(j);
  }
  return out;
}

// ---- the graph (small plans) ----

const BW = 150, BH = 22, GX = 40, GY = 8, LABEL_MAX = 19;

// A box's label: the task id from its start (the node comes first), cut at the end with an
// ellipsis when it does not fit; the whole id is the box's title and tooltip.
export function boxLabel(id) {
  return id.length > LABEL_MAX ? `${id.slice(0, LABEL_MAX - 1)}…` : id;
}

function graph(tasks, a) {
  const cols = [];
  tasks.forEach((t, i) => (cols[a.depth[i]] = cols[a.depth[i]] || []).push(i));
  const pos = new Array(tasks.length);
  cols.forEach((c, x) => c.forEach((i, y) => (pos[i] = [x * (BW + GX), y * (BH + GY)])));
  const W = cols.length * (BW + GX), H = Math.max(...cols.map(c => c.length)) * (BH + GY);
  const edges = s('g', { class: 'edges' });
  a.deps.forEach((ds, i) => ds.forEach(d => {
    const [x1, y1] = pos[d], [x2, y2] = pos[i];
    const crit = a.crit.has(i) && a.crit.has(d);
    edges.append(s('path', {
      d: `M${x1 + BW},${y1 + BH / 2} C${x1 + BW + GX / 2},${y1 + BH / 2} ${x2 - GX / 2},${y2 + BH / 2} ${x2},${y2 + BH / 2}`,
      class: crit ? 'edge crit' : 'edge',
    }));
  }));
  const boxes = tasks.map((t, i) => {
    const label = boxLabel(t.id);
    const g = hoverable(s('g', {
      class: `task st-${t.status}${a.crit.has(i) ? ' crit' : ''}`, tabindex: 0, role: 'img',
      transform: `translate(${pos[i][0]},${pos[i][1]})`, 'data-id': t.id, 'aria-label': `${t.id}: ${t.status}`,
    }, s('rect', { width: BW, height: BH, rx: 4 }),
    s('text', { x: 6, y: 15, class: 'glyph' }, GLYPH[t.status] || '?'),
    s('text', { x: 20, y: 15 }, label), s('title', {}, t.id)));
    g.__task = t;
    return g;
  });
  const svg = s('svg', { class: 'dag', width: W, height: H, viewBox: `-4 -4 ${W + 8} ${H + 8}`, role: 'group', 'aria-label': 'task graph' },
    edges, s('g', {}, boxes));
  return {
    el: h('div', { class: 'scroll dag-wrap' }, svg),
    update(ts) {
      ts.forEach((t, i) => {
        const g = boxes[i];
        if (!g) return;
        g.__task = t;
        g.setAttribute('class', `task st-${t.status}${a.crit.has(i) ? ' crit' : ''}`);
        g.setAttribute('aria-label', `${t.id}: ${t.status}`);
        g.querySelector('.glyph').textContent = GLYPH[t.status] || '?';
        if (tip.dataset.task === t.id && !tip.hidden) showTip(t, g);
      });
    },
  };
}

// ---- groups (large plans: counted and listed by the server) ----

function bar(c, total) {
  return h('span', { class: 'bar', 'aria-hidden': 'true' }, BAR_ORDER.filter(st => c[st]).map(st => {
    const seg = h('span', { class: `seg st-${st}` });
    seg.style.flexGrow = String(c[st] / total);
    return seg;
  }));
}

// A query string from an object, leaving out undefined; null becomes '' (the API's "none").
function qs(o) {
  return Object.entries(o).filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(v === null ? '' : v)}`).join('&');
}

// The tasks of a phase grouped by service and action (default) or by node: the groups and
// their counts come from GET /v1/jobs/{id}/tasks/groups, an opened group lists its tasks a
// page at a time from GET /v1/jobs/{id}/tasks (PAGE more on request), so the page holds a
// few hundred elements whatever the job's size.
function groups(jobId, phase) {
  let mode = 'service', filter = '', shown = GROUPS_SHOWN, seq = 0;
  const open = new Map(); // key -> {n: tasks shown, fill}
  const list = h('div', { class: 'groups' });
  const sel = h('select', { id: 'group-mode', onchange: () => {
    mode = sel.value; shown = GROUPS_SHOWN; open.clear();
    clear(list); delete list.dataset.mode; // the other grouping's rows go at once
    render();
  } },
    h('option', { value: 'service' }, 'service · action'), h('option', { value: 'node' }, 'node'));
  const find = h('input', { type: 'search', id: 'group-filter', placeholder: 'filter groups', oninput: () => { filter = find.value; render(); } });
  const filterOf = g => (mode === 'node' ? { node: g.node } : { service: g.service, action: g.action || undefined });
  async function render() {
    const my = ++seq;
    let r;
    try {
      r = await get(`/v1/jobs/${jobId}/tasks/groups?${qs({ by: mode, phase, limit: shown, q: filter || undefined })}`);
    } catch (e) {
      if (my === seq) fill(list, h('p', { class: 'error', role: 'alert' }, e.message));
      return;
    }
    if (my !== seq) return; // a newer render is on its way
    clear(list);
    list.dataset.mode = mode; // what the rows show (the browser test waits on it)
    for (const g of r.items || []) {
      const c = g.states || {};
      const body = h('div', { class: 'gtasks' });
      const det = h('details', { class: 'group', 'data-key': g.key, ontoggle: () => {
        if (det.open) { if (!open.has(g.key)) open.set(g.key, PAGE); fillGroup(); } else open.delete(g.key);
      } },
      h('summary', {}, h('span', { class: 'gname' }, g.key), bar(c, g.total),
        h('span', { class: 'gcount' }, `${c.succeeded || 0}/${g.total} done`,
          STATES.filter(st => c[st] && st !== 'succeeded').map(st => ` · ${c[st]} ${st}`))),
      body);
      const fillGroup = async () => {
        const n = open.get(g.key) || PAGE;
        const items = [];
        let cursor;
        try {
          while (items.length < n) { // pages of at most 1000 up to what is shown
            const p = await get(`/v1/jobs/${jobId}/tasks?${qs({ phase, ...filterOf(g), limit: Math.min(1000, n - items.length), cursor })}`);
            items.push(...(p.items || []));
            if (!p.next) break;
            cursor = p.next;
          }
        } catch (e) { fill(body, h('p', { class: 'error' }, e.message)); return; }
        fill(body, items.map(t => chip(t)),
          g.total > n ? h('button', { class: 'link', onclick: () => { open.set(g.key, n + PAGE); fillGroup(); } }, `show ${Math.min(PAGE, g.total - n)} more of ${g.total - n}`) : null);
      };
      if (open.has(g.key)) { det.open = true; fillGroup(); }
      list.append(det);
    }
    if (r.groups > shown)
      list.append(h('button', { class: 'link', onclick: () => { shown += GROUPS_SHOWN; render(); } }, `show more groups (${r.groups - shown} hidden)`));
  }
  render();
  return {
    el: h('div', {}, h('div', { class: 'row' }, h('label', {}, 'Group by ', sel), find), list),
    update() { render(); },
  };
}

function chip(t, crit) {
  const c = hoverable(h('span', { class: `chip st-${t.status}${crit ? ' crit' : ''}`, tabindex: 0, 'data-id': t.id, 'aria-label': `${t.id}: ${t.status}` },
    h('span', { class: 'glyph' }, GLYPH[t.status] || '?'), ' ', t.id));
  c.__task = t;
  if (tip.dataset.task === t.id && !tip.hidden) showTip(t, c);
  return c;
}

// ---- the view ----

function legend(c) {
  return h('ul', { class: 'legend', 'aria-label': 'task states' },
    STATES.map(st => h('li', { class: `st-${st}` }, h('span', { class: 'swatch' }, GLYPH[st]), ` ${st}`, c && c[st] ? ` (${c[st]})` : '')),
    h('li', { class: 'crit-key' }, h('span', { class: 'swatch' }), ' critical path'));
}

function counts(tasks) {
  const c = {};
  for (const t of tasks) c[t.status] = (c[t.status] || 0) + 1;
  return c;
}

// One phase: a graph of its tasks (at most GRAPH_MAX, all read), or its groups (any size).
// prog: the summary's progress of the phase ({total, states}).
function phaseSection(title, jobId, phase, prog, tasks, id) {
  const small = !!tasks;
  const a = small ? analyse(tasks) : null;
  const view = small ? graph(tasks, a) : groups(jobId, phase);
  const leg = h('div', {}, legend(small ? counts(tasks) : prog.states));
  const sec = h('section', { id, class: 'phase' }, h('h2', {}, title,
    h('span', { class: 'help' }, ` ${prog.total} tasks · ${small ? `graph · critical path ${a.crit.size} tasks` : 'grouped (the critical path is drawn for plans of at most ' + GRAPH_MAX + ' tasks)'}`)), leg, view.el);
  return {
    el: sec, small, total: prog.total,
    update(ts, p) {
      if (small !== !!ts || (small && ts.length !== tasks.length) || p.total !== prog.total) return false; // re-laid out
      if (small) {
        tasks = ts;
        fill(leg, legend(counts(ts)));
        view.update(ts);
      } else {
        prog = p;
        fill(leg, legend(p.states));
        view.update();
      }
      return true;
    },
  };
}

// Failures: the job's error, and each failed task (at most 20) with its recorded attempts
// (GET /v1/jobs/{id}/attempts: worker, how it ended, message, the plugin's output tail),
// loaded when its row is opened; the first three are open. Attempts of a failed task do not
// change any more, so they are kept for the view's life in `cache`.
function failedSection(failedTasks, job, cache) {
  const failed = failedTasks.slice(0, 20);
  if (!failed.length && !job.error) return null;
  const err = job.error ? (typeof job.error === 'string' ? job.error : (job.error.message || JSON.stringify(job.error))) : '';
  return h('section', { class: 'failed', id: 'failed' }, h('h2', {}, 'Failures'),
    err ? h('p', { class: 'error' }, err) : null,
    failed.map((t, i) => {
      const body = h('div', { class: 'attempts' });
      const det = h('details', { class: 'failed-task', 'data-id': t.id, ontoggle: () => { if (det.open) attempts(job.id, t, body, cache); } },
        h('summary', {}, h('strong', {}, t.id), ` · ${t.phase === 'r' ? 'rollback · ' : ''}${t.attempts || 0} attempt(s)`,
          t.worker ? ` · last on ${t.worker}` : '', t.ended_at ? ` · ${fmtTime(t.ended_at)}` : ''),
        body);
      if (i < 3) { det.open = true; attempts(job.id, t, body, cache); }
      return det;
    }));
}

async function attempts(jobId, t, el, cache) {
  const key = `${t.phase}/${t.id}`;
  if (!cache.has(key))
    cache.set(key, get(`/v1/jobs/${jobId}/attempts?task=${encodeURIComponent(t.id)}&phase=${t.phase || 'f'}`)
      .catch(e => ({ error: e })));
  fill(el, attemptList(await cache.get(key)));
}

// A task's attempts as GET /v1/jobs/{id}/attempts answers them: each with its worker, how
// it ended, its message and the tail of the plugin's standard error.
function attemptList(r) {
  if (r.error)
    return h('p', { class: 'help' }, r.error.status === 404 ? 'this droverd does not return attempts yet' : r.error.message);
  return [h('ol', { class: 'attempt-list' }, (r.items || []).map(a => h('li', {},
    h('span', {}, badge(a.status), ` attempt ${a.attempt}`, a.worker ? ` on ${a.worker}` : '',
      a.started_at ? ` · ${fmtTime(a.started_at)}` : '', a.how ? ` · ${a.how}` : ''),
    a.message ? h('div', { class: 'msg' }, a.message) : null,
    a.output_tail ? h('pre', { class: 'tail', tabindex: 0, 'aria-label': 'output tail' }, a.output_tail)
      : h('p', { class: 'help' }, a.status === 'running' ? 'running: its output comes when the attempt ends' : 'no output')))),
  (r.items || []).length ? null : h('p', { class: 'help' }, 'no attempt recorded yet')];
}

// Task logs, live: pick a task (by default the one that ended last, followed as the job
// moves on) and see its attempts with their output tails, read again after each change of
// the job while it runs. Offers the tasks that have started, the latest LOG_TASKS of them.
// Below, the live output: every attempt of the job as it ends (a cursor, see feed()).
const LOG_TASKS = 200;
const FEED_MAX = 200;
function logsSection(jobId) {
  let follow = true, chosen = '', seq = 0, last = '';
  const sel = h('select', { id: 'log-task', onchange: () => { chosen = sel.value; follow = false; followBox.checked = false; show(); } });
  const followBox = h('input', { type: 'checkbox', id: 'log-follow', checked: true, onchange: () => { follow = followBox.checked; if (follow) { chosen = ''; } pick(); show(); } });
  const out = h('div', { class: 'attempts', id: 'log-out', 'aria-live': 'polite' });
  const el = h('section', { class: 'logs', id: 'logs' }, h('h2', {}, 'Task logs'),
    h('div', { class: 'row' }, h('label', {}, 'Task ', sel), h('label', {}, followBox, ' follow the latest')), out);
  let started = [];
  // Following: the task that ended last (its output is whole), else the one that started last.
  function pick() {
    if (follow || !chosen || !started.some(t => key(t) === chosen)) {
      const at = t => Date.parse(t.ended_at || 0) || 0;
      const ended = started.filter(t => t.ended_at).sort((a, b) => at(b) - at(a) || b.idx - a.idx)[0];
      const latest = ended || started[0];
      chosen = latest ? key(latest) : '';
    }
    sel.value = chosen;
  }
  const key = t => `${t.phase || 'f'}/${t.id}`;
  async function show() {
    const t = started.find(x => key(x) === chosen);
    if (!t) { fill(out, h('p', { class: 'help' }, 'no task has started yet')); return; }
    const my = ++seq;
    const r = await get(`/v1/jobs/${jobId}/attempts?task=${encodeURIComponent(t.id)}&phase=${t.phase || 'f'}`).catch(e => ({ error: e }));
    if (my !== seq) return; // a newer read is on its way
    out.dataset.task = t.id;
    fill(out, attemptList(r));
  }
  // Live output: every attempt as it ends, oldest first, as `drover job logs --follow`
  // prints them, read through the same cursor (GET /v1/jobs/{id}/attempts?since=): each
  // read costs what is new, whatever the job's size. The last FEED_MAX stay on the page.
  let cursor = '0', feeding = null, again = false, feedOff = false;
  const feedList = h('ol', { class: 'feed', id: 'log-feed' });
  const feedNote = h('p', { class: 'help', id: 'log-feed-note' }, 'no attempt has ended yet');
  add(el, h('h3', {}, 'Live output'), h('p', { class: 'help' }, 'each attempt as it ends, with the tail of its standard error'), feedNote,
    h('div', { class: 'feed-wrap' }, feedList));
  function entry(a) {
    return h('li', { 'data-task': a.task, 'data-seq': a.seq },
      h('span', {}, badge(a.status), ` ${a.phase === 'r' ? 'rollback · ' : ''}${a.task} attempt ${a.attempt}`, a.worker ? ` on ${a.worker}` : '',
        a.ended_at ? ` · ended ${fmtTime(a.ended_at)}` : ''),
      a.message ? h('div', { class: 'msg' }, a.message) : null,
      a.output_tail ? h('pre', { class: 'tail' }, a.output_tail) : null);
  }
  async function feedOnce() {
    for (let more = true; more && !feedOff;) {
      const r = await get(`/v1/jobs/${jobId}/attempts?since=${cursor}&limit=500`);
      if (!r || typeof r.cursor !== 'string') { feedOff = true; feedNote.textContent = 'this droverd does not give attempts by cursor'; return; }
      const ended = (r.items || []).filter(a => a.ended_at);
      if (ended.length) {
        add(feedList, ended.map(entry));
        while (feedList.childElementCount > FEED_MAX) feedList.firstElementChild.remove();
        feedNote.textContent = `${feedList.dataset.count = Number(feedList.dataset.count || 0) + ended.length} attempt(s) ended`;
        feedList.lastElementChild.scrollIntoView({ block: 'nearest' });
      }
      cursor = r.cursor;
      more = !!r.more;
    }
  }
  // One read at a time; a change while one runs asks for one more after it.
  async function feed() {
    if (feedOff) return;
    if (feeding) { again = true; return feeding; }
    feeding = (async () => {
      try {
        do { again = false; await feedOnce(); } while (again && !feedOff);
      } catch (e) {
        // An older droverd refuses since= (it wants a task): no live output from it.
        if (e.status === 400) feedOff = true;
        feedNote.textContent = e.status === 400 ? 'this droverd does not give attempts by cursor' : `live output: ${e.message}`;
      } finally { feeding = null; }
    })();
    return feeding;
  }
  return {
    el,
    feed,
    update(tasks) {
      started = tasks.filter(t => t.started_at || t.attempts || ['queued', 'running'].includes(t.status))
        .sort((a, b) => (Date.parse(b.started_at || 0) || Infinity) - (Date.parse(a.started_at || 0) || Infinity) || b.idx - a.idx)
        .slice(0, LOG_TASKS);
      const sig = started.map(t => `${key(t)}:${t.status}:${t.attempts || 0}`).join(',');
      if (sig === last) return; // nothing new for the logs
      last = sig;
      fill(sel, started.map(t => h('option', { value: key(t) }, `${t.phase === 'r' ? 'rollback · ' : ''}${t.id} (${t.status})`)));
      pick();
      show();
    },
  };
}

export async function jobView(main, [id], ctx) {
  let job;
  try {
    job = await get(`/v1/jobs/${id}?tasks=none`);
  } catch (e) {
    add(main, h('h1', {}, `Job #${id}`), h('p', { class: 'error', role: 'alert', id: 'not-found' },
      e.status === 404 ? `job ${id} does not exist or is not yours to see` : e.message));
    return;
  }
  let stopped = false, timer = null, sections = {}, lastFull = 0;
  const abort = new AbortController(); // ends a held long-poll when the view is left
  const attemptCache = new Map();
  const head = h('div', {});
  const prog = h('div', { class: 'progress-wrap' });
  const ctl = h('div', { class: 'row ops' });
  const body = h('div', {});
  const live = h('p', { class: 'help live', 'aria-live': 'off', id: 'live' });
  const logs = logsSection(id);
  add(main, head, prog, ctl, live, body, logs.el);

  const act = async what => {
    try { await post(`/v1/jobs/${id}/${what}`); await full(); shown(); } catch (e) { live.textContent = e.message; }
  };

  function renderHead() {
    fill(head, 
      h('p', { class: 'crumbs' }, h('a', { href: '#/clusters' }, 'Clusters'), ' / ',
        job.cluster ? h('a', { href: `#/clusters/${job.cluster}` }, `cluster ${job.cluster}`) : '', ' / ', `job #${job.id}`),
      h('h1', {}, `Job #${job.id} · ${job.operation} `, h('span', { id: 'job-status' }, badge(job.status))),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Owner'), h('dd', { id: 'job-owner' }, job.owner || '—'),
        h('dt', {}, 'Requested by'), h('dd', {}, job.requested_by || ''),
        job.control ? [h('dt', {}, 'Control'), h('dd', {}, job.control)] : null,
        h('dt', {}, 'Created'), h('dd', {}, fmtTime(job.created_at)),
        h('dt', {}, 'Started'), h('dd', {}, fmtTime(job.started_at)),
        h('dt', {}, 'Ended'), h('dd', {}, fmtTime(job.ended_at))));
    const p = job.progress || { done: 0, total: 0 };
    const pct = p.total ? Math.round((100 * p.done) / p.total) : 0;
    const rb = job.rollback_progress;
    fill(prog, 
      h('label', { for: 'progress' }, `Progress: ${p.done} of ${p.total} tasks (${pct}%)`),
      h('progress', { id: 'progress', max: p.total || 1, value: p.done }),
      rb ? [h('label', { for: 'rb-progress' }, `Rollback: ${rb.done} of ${rb.total}`), h('progress', { id: 'rb-progress', max: rb.total || 1, value: rb.done })] : null);
    const running = ['pending', 'running'].includes(job.status);
    fill(ctl, 
      running ? h('button', { onclick: () => act('pause') }, 'Pause') : null,
      job.status === 'paused' ? h('button', { onclick: () => act('resume') }, 'Resume') : null,
      ['pending', 'running', 'paused'].includes(job.status) ? h('button', { class: 'danger', onclick: () => act('cancel') }, 'Cancel') : null);
  }

  // What the sections show, read through the paged API (GET /v1/jobs/{id}/tasks): a phase
  // of at most GRAPH_MAX tasks whole (one page), a larger one as groups (their own reads),
  // the failed tasks (20), and for the logs the tasks that run. Never the whole job.
  async function load() {
    const d = { prog: { f: job.progress || { total: 0 }, r: job.rollback_progress || { total: 0 } }, tasks: {} };
    for (const ph of ['f', 'r']) {
      const n = d.prog[ph].total || 0;
      if (n && n <= GRAPH_MAX)
        d.tasks[ph] = (await get(`/v1/jobs/${id}/tasks?phase=${ph}&limit=${GRAPH_MAX}`)).items || [];
    }
    const byKey = new Map();
    const put = ts => ts.forEach(t => byKey.set(`${t.phase}/${t.id}`, t));
    put([...(d.tasks.f || []), ...(d.tasks.r || [])]);
    d.failed = (d.tasks.f && (d.tasks.r || !d.prog.r.total))
      ? [...byKey.values()].filter(t => t.status === 'failed')
      : (await get(`/v1/jobs/${id}/tasks?state=failed&limit=20`)).items || [];
    if (!(d.tasks.f && (d.tasks.r || !d.prog.r.total))) // large: the logs offer what runs or failed
      put((await get(`/v1/jobs/${id}/tasks?state=running,queued&limit=${LOG_TASKS}`)).items || []);
    put(d.failed);
    d.logTasks = [...byKey.values()];
    return d;
  }

  function renderTasks(d) {
    let relayout = false;
    for (const ph of ['f', 'r']) {
      const n = d.prog[ph].total || 0;
      if (sections[ph] && !sections[ph].update(d.tasks[ph], d.prog[ph])) relayout = true;
      if (!sections[ph] !== !n) relayout = true;
    }
    if (relayout) {
      hideTip();
      sections = {};
      clear(body);
      if (!d.prog.f.total) add(body, h('p', { class: 'help' }, 'No tasks yet: the owner has not planned this job.'));
      if (d.prog.f.total) { sections.f = phaseSection('Tasks', id, 'f', d.prog.f, d.tasks.f, 'dag'); add(body, sections.f.el); }
      if (d.prog.r.total) { sections.r = phaseSection('Rollback plan', id, 'r', d.prog.r, d.tasks.r, 'rollback'); add(body, sections.r.el); }
    }
    const old = body.querySelector('#failed');
    if (old) old.remove();
    const f = failedSection(d.failed, job, attemptCache);
    if (f) add(body, f);
    logs.update(d.logTasks);
    logs.feed();
  }

  // The summary is long-polled: droverd holds the request until the job's revision changes
  // (a task starts or ends, the status or owner changes) or `wait` seconds pass. The tasks
  // are read again after a change, at most every `every` ms for a large job. A droverd
  // without revisions gets a plain poll every second.
  let rev = job.revision || '', pending = false;
  const every = () => {
    const total = (job.progress && job.progress.total) || 0;
    return total > 20000 ? 10000 : total > 3000 ? 4000 : 0;
  };
  async function full() {
    const d = await load();
    lastFull = Date.now();
    pending = false;
    renderTasks(d);
  }
  function shown() {
    renderHead();
    live.textContent = `${FINAL.includes(job.status) ? 'final' : 'live'} · updated ${new Date().toLocaleTimeString()}`;
  }
  async function tick() {
    const left = every() - (Date.now() - lastFull);
    const wait = pending ? Math.max(1, Math.ceil(left / 1000)) : 20;
    const t0 = Date.now();
    const sum = await get(`/v1/jobs/${id}?tasks=none` + (rev ? `&wait=${wait}&revision=${rev}` : ''), abort.signal);
    if (stopped) return;
    const changed = !sum.revision || sum.revision !== rev;
    // A node that answers at once with nothing new (it does not hold requests): slow down.
    if (!changed && !pending && Date.now() - t0 < 250) await new Promise(r => { timer = setTimeout(r, 1000); });
    rev = sum.revision || '';
    const status = job.status;
    job = Object.assign(job, sum);
    if (changed) pending = true;
    if (pending && (Date.now() - lastFull >= every() || job.status !== status || FINAL.includes(job.status)))
      await full();
    shown();
    if (!sum.revision) await new Promise(r => { timer = setTimeout(r, 1000); });
  }

  async function loop() {
    while (!stopped && !FINAL.includes(job.status)) {
      try {
        await tick();
      } catch (e) {
        if (stopped) return;
        live.textContent = `update failed: ${e.message}; retrying`;
        await new Promise(r => { timer = setTimeout(r, 2000); });
      }
    }
    if (!stopped && pending) { try { await full(); shown(); } catch (e) { /* shown next time */ } }
  }

  await full();
  shown();
  if (!FINAL.includes(job.status)) loop();
  return () => { stopped = true; clearTimeout(timer); hideTip(); abort.abort(); };
}

