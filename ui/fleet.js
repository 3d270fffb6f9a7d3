// fleet: droverd members (ring share, owned jobs, drain state; drain and undrain for admins
// when this droverd has that API), workers, and queues (backlog, oldest item, and the
// recommended worker count over time when GET /v1/queues reports one). Polled every 5 s
// while shown; the chart keeps the samples taken since the view opened.
import { h, s, clear, add, fill, table, badge, fmtAge, fmtTime } from './dom.js';
import { get, post, routeExists } from './api.js';

const history = new Map(); // queue class -> [{t, rec, len}]
const HISTORY_MAX = 120;

function recommended(q) {
  for (const k of ['recommended_workers', 'recommended', 'workers_recommended'])
    if (typeof q[k] === 'number') return q[k];
  return undefined;
}

// The recommended worker count of one queue over the samples taken since the view opened:
// the number now, and a line (flat while there is one sample).
function chart(samples) {
  const W = 160, H = 32;
  const pts = samples.filter(p => p.rec !== undefined);
  if (!pts.length) return h('span', { class: 'help' }, 'not reported');
  const vals = pts.map(p => p.rec);
  const max = Math.max(1, ...vals), t0 = pts[0].t, t1 = Math.max(t0 + 1, pts[pts.length - 1].t);
  const y = v => (H - 3 - (v / max) * (H - 6)).toFixed(1);
  const line = pts.length === 1 ? `2,${y(vals[0])} ${W - 2},${y(vals[0])}`
    : pts.map(p => `${(((p.t - t0) / (t1 - t0)) * (W - 4) + 2).toFixed(1)},${y(p.rec)}`).join(' ');
  const secs = Math.round((t1 - t0) / 1000);
  return h('span', { class: 'rec' },
    h('strong', { class: 'rec-now' }, String(vals[vals.length - 1])),
    s('svg', { class: 'spark', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-label': `recommended workers over the last ${secs} s: now ${vals[vals.length - 1]}, at most ${Math.max(...vals)}` },
    s('line', { x1: 0, y1: H - 1, x2: W, y2: H - 1, class: 'axis' }),
    s('polyline', { points: line })),
    h('span', { class: 'help' }, `max ${Math.max(...vals)} · ${secs} s`));
}

export async function fleetView(main, args, ctx) {
  if (ctx.who.role !== 'admin') {
    add(main, h('h1', {}, 'Fleet'), h('p', {}, 'The fleet views are for a tenant\'s admins.'));
    return;
  }
  // A tenant's admin drains its workers (POST /v1/workers/{id}/drain, where this droverd has
  // it); a droverd serves every tenant, so only a superadmin drains one (drover node drain).
  const canDrain = false;
  const canDrainWorker = await routeExists('/v1/workers/_probe/drain');
  const box = h('div', {});
  const status = h('p', { class: 'help live', id: 'live' });
  add(main, h('h1', {}, 'Fleet'), status, box);
  let stopped = false, timer = null;

  async function load() {
    const [m, w, q] = await Promise.allSettled([get('/v1/members'), get('/v1/workers'), get('/v1/queues')]);
    clear(box);
    if (m.status === 'fulfilled') add(box, members(m.value, canDrain, load));
    else add(box, h('p', { class: 'error' }, `members: ${m.reason.message}`));
    if (w.status === 'fulfilled') add(box, workers(w.value, canDrainWorker, load));
    else add(box, h('p', { class: 'error' }, `workers: ${w.reason.message}`));
    if (q.status === 'fulfilled') add(box, queues(q.value));
    else add(box, h('p', { class: 'error' }, `queues: ${q.reason.message}`));
    status.textContent = `live · updated ${new Date().toLocaleTimeString()}`;
  }
  async function loop() {
    if (stopped) return;
    try { await load(); } catch (e) { status.textContent = `update failed: ${e.message}`; }
    if (!stopped) timer = setTimeout(loop, 5000);
  }
  await loop();
  return () => { stopped = true; clearTimeout(timer); };
}

function state(m) {
  const d = m.data || {};
  return d.drained ? 'drained' : d.draining ? 'draining' : 'serving';
}

// A drain or undrain, confirmed first: it moves every job the node owns.
async function act(path, what, reload) {
  if (!window.confirm(`${what}?`)) return;
  try { await post(path); } catch (e) { window.alert(e.message); }
  reload();
}

function members(r, canDrain, reload) {
  const list = r.members || [];
  const jobs = r.jobs || [];
  const live = list.filter(m => !(m.data && m.data.draining));
  const weight = m => (m.data && m.data.weight > 0 ? m.data.weight : 1);
  const total = live.reduce((a, m) => a + weight(m), 0);
  const owned = id => jobs.filter(j => j.owner === id);
  return h('section', { id: 'members' }, h('h2', {}, 'Members'),
    h('p', { class: 'help' }, `Ring of ${r.ring ? r.ring.size : live.length} member(s); share is the member's weight over the ring's (a draining member has none).`),
    table([
      { title: 'Member', get: m => m.id },
      { title: 'HTTP', get: m => (m.data && m.data.http) || '' },
      { title: 'State', get: m => badge(state(m)) },
      { title: 'Ring share', cls: 'num', get: m => (m.data && m.data.draining) || !total ? '0%' : `${Math.round((100 * weight(m)) / total)}%` },
      { title: 'Owned jobs', get: m => owned(m.id).map(j => h('a', { href: `#/jobs/${j.id}`, class: 'owned' }, `#${j.id} `)) },
      { title: 'Started', get: m => (m.data && m.data.started ? fmtTime(m.data.started * 1000) : '') },
      { title: '', get: m => {
        if (!canDrain) return '';
        const undrain = !!(m.data && m.data.draining);
        return h('button', { class: undrain ? '' : 'danger', onclick: () => act(
          `/v1/members/${encodeURIComponent(m.id)}/${undrain ? 'undrain' : 'drain'}`,
          `${undrain ? 'Undrain' : 'Drain'} ${m.id}${undrain ? '' : ': it leaves the ring and hands its jobs over'}`, reload) },
        undrain ? 'Undrain' : 'Drain');
      } },
    ], list),
    jobs.some(j => !j.owner) ? h('p', { class: 'help' }, 'Jobs without an owner wait for the ring to name one.') : null,
    canDrain ? null : h('p', { class: 'help', id: 'members-drain-help' }, 'A droverd serves every tenant: a superadmin drains one (drover node drain ID).'));
}

function workers(r, canDrain, reload) {
  const list = r.workers || [];
  const d = w => w.data || w;
  return h('section', { id: 'workers' }, h('h2', {}, 'Workers'),
    h('p', { class: 'help' }, 'Tasks in progress per class are the queues\' "claimed" below.'), table([
    { title: 'Worker', get: w => w.id || d(w).id },
    { title: 'Class', get: w => d(w).class || d(w).worker_class || '' },
    { title: 'Capacity', cls: 'num', get: w => d(w).concurrency ?? d(w).capacity ?? '' },
    { title: 'Running', cls: 'num', get: w => Array.isArray(d(w).running) ? d(w).running.length : (d(w).running ?? d(w).busy ?? '—') },
    { title: 'Classes', get: w => Array.isArray(d(w).classes) ? d(w).classes.join(', ') : '' },
    { title: 'Host', get: w => [d(w).host, d(w).pid && `pid ${d(w).pid}`].filter(Boolean).join(' · ') },
    { title: 'Version', get: w => d(w).version || '' },
    { title: 'Started', get: w => (d(w).started ? fmtTime(d(w).started * 1000) : '') },
    { title: '', get: w => canDrain && !d(w).draining ? h('button', { class: 'danger', onclick: () => act(
      `/v1/workers/${encodeURIComponent(w.id || d(w).id)}/drain`,
      `Drain worker ${w.id || d(w).id}: it takes nothing more, finishes what runs and exits`, reload) }, 'Drain') : (d(w).draining ? badge('draining') : '') },
  ], list));
}

function queues(r) {
  const list = r.queues || [];
  const now = Date.now();
  for (const q of list) {
    const k = q.class;
    if (!history.has(k)) history.set(k, []);
    const hq = history.get(k);
    hq.push({ t: now, rec: recommended(q), len: q.length });
    if (hq.length > HISTORY_MAX) hq.shift();
  }
  return h('section', { id: 'queues' }, h('h2', {}, 'Queues'), table([
    { title: 'Class', get: q => q.class },
    { title: 'Backlog', cls: 'num', get: q => q.length },
    { title: 'Claimed', cls: 'num', get: q => q.claimed },
    { title: 'Oldest', cls: 'num', get: q => fmtAge(q.oldest_age_ms) },
    { title: 'Arrivals', cls: 'num', get: q => (typeof q.arrival_per_s === 'number' ? `${q.arrival_per_s.toFixed(2)}/s` : '') },
    { title: 'Mean task', cls: 'num', get: q => (typeof q.mean_task_s === 'number' ? `${q.mean_task_s.toFixed(1)} s${q.mean_task_measured === false ? ' (est.)' : ''}` : '') },
    { title: 'Recommended workers', get: q => chart(history.get(q.class) || []) },
  ], list));
}
