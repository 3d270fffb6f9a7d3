// dashboard: the browser half of integration/ui/dashboard.sh. Drives headless Chromium
// through the dashboard against a real stack and checks what a person would see:
//   sign-in (keyboard), tenant and role shown; the clusters list and a cluster; operation
//   dialogs showing their dry run as the CLI's diff, applied with its revision (409 when the
//   cluster changed in between, then the new plan); a running
//   job's DAG changing state while we watch; a waiting task's explanation on hover and on
//   keyboard focus; a large job grouped (bounded DOM); the fleet; the audit log with a
//   filter; a phone-sized window; another tenant's cluster not reachable; no console errors.
// Screenshots of each view go to $SHOTS. Exit status 0 when every check held.
import { mkdirSync, writeFileSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { launch } from './cdp.mjs';

const env = k => { const v = process.env[k]; if (!v) { console.error(`dashboard: ${k} is not set`); process.exit(2); } return v; };
const URL = env('DROVER_URL'), TOKEN = env('ADMIN_TOKEN'), SHOTS = env('SHOTS');
const CLUSTER = env('CLUSTER'), JOB = env('JOB_RUNNING'), BIG = env('JOB_BIG'), OTHER = env('OTHER_CLUSTER');
const SLOW = env('JOB_SLOW'), FAILED = env('JOB_FAILED'), USER_TOKEN = env('USER_TOKEN');
mkdirSync(SHOTS, { recursive: true });

const errors = [];
const expected404 = [/\/v1\/(members|workers)\/_probe\/drain$/]; // the drain API probes
let allow404 = [];
// A job as GET /v1/jobs/{id} gives it, with nodes x per tasks: a chain per node after a
// first task on node 1, some running, some waiting with a reason, most done.
function hugeJob(id, nodes, per) {
  const actions = ['create', 'confirm', 'bootstrap', 'install', 'configure', 'initialize', 'start'];
  const services = ['base', 'hdfs-datanode', 'yarn-nodemanager'];
  const tasks = [];
  for (let n = 0; n < nodes; n++)
    for (let k = 0; k < per; k++) {
      const idx = tasks.length;
      const svc = k < 3 ? null : services[k % 3];
      const action = k < 3 ? actions[k] : actions[3 + (k % 4)];
      const status = n < nodes * 0.6 ? 'succeeded' : n < nodes * 0.61 ? (k < 5 ? 'succeeded' : k === 5 ? 'running' : 'waiting') : 'waiting';
      const t = { id: `node-${n + 1}/${svc ? svc + '/' : ''}${action}${k >= 7 ? '-' + k : ''}`, phase: 'f', idx,
        node_id: `node-${n + 1}`, service: svc, action, status, attempts: status === 'waiting' ? 0 : 1,
        deps: k ? [idx - 1] : (n ? [0] : []), strategy: null };
      if (status === 'waiting') t.why = { reason: 'dependency', text: `waits for ${tasks[idx - 1] ? tasks[idx - 1].id : 'node-1/create'}` };
      tasks.push(t);
    }
  const done = tasks.filter(t => t.status === 'succeeded').length;
  tasks.push({ id: 'extra/anchor', phase: 'f', idx: tasks.length, node_id: null, service: 'x', action: 'anchor', status: 'waiting', deps: [], attempts: 0 });
  while (tasks.length < 140007) tasks.push({ ...tasks[tasks.length - 1], idx: tasks.length, id: `extra/anchor-${tasks.length}` });
  const states = {};
  for (const t of tasks) states[t.status] = (states[t.status] || 0) + 1;
  return { id: String(id), cluster: '1', operation: 'create', status: 'running', control: null, owner: 'droverd-1',
    progress: { done, total: tasks.length, states }, tasks, created_at: new Date().toISOString(), started_at: new Date().toISOString(), ended_at: null, error: null };
}

// GET /v1/jobs/{id}/tasks and /tasks/groups over a job's tasks, as droverd answers them
// (docs/api.md "Jobs"), for the synthetic job the browser serves.
function tasksPage(tasks, q) {
  const want = (k, v) => !q.has(k) || (q.get(k) === '' ? v === null || v === undefined : q.get(k) === v);
  const states = q.get('state') ? q.get('state').split(',') : null;
  const limit = Number(q.get('limit') || 100);
  let after = -1;
  if (q.get('cursor')) after = Number(q.get('cursor').slice(2));
  const items = [];
  for (const t of tasks) {
    if (t.idx <= after || !want('phase', t.phase) || !want('node', t.node_id) || !want('service', t.service) || !want('action', t.action)) continue;
    if (states && !states.includes(t.status)) continue;
    items.push(t);
    if (items.length === limit) break;
  }
  return { items, next: items.length === limit ? `f.${items[items.length - 1].idx}` : null };
}
function taskGroups(tasks, q) {
  const by = q.get('by') || 'service', limit = Number(q.get('limit') || 60), filter = q.get('q') || '';
  const m = new Map();
  for (const t of tasks) {
    const key = by === 'node' ? (t.node_id || '(no node)') : `${t.service || '(machine)'} · ${t.action || '?'}`;
    if (filter && !key.includes(filter)) continue;
    let g = m.get(key);
    if (!g) m.set(key, g = by === 'node' ? { key, node: t.node_id || null, first: t.idx, total: 0, states: {} }
      : { key, service: t.service || null, action: t.action || null, first: t.idx, total: 0, states: {} });
    g.total++;
    g.states[t.status] = (g.states[t.status] || 0) + 1;
  }
  const rank = g => (g.states.failed ? 0 : g.states.running || g.states.queued ? 1 : g.states.waiting || g.states.pending ? 2 : 3);
  const items = [...m.values()].sort((a, b) => rank(a) - rank(b) || a.first - b.first);
  return { by, phase: 'f', groups: items.length, items: items.slice(0, limit) };
}

const sleep = ms => new Promise(r => setTimeout(r, ms));
const ok = m => console.log(`ok: ${m}`);

const log = openSync(join(SHOTS, 'chromium.log'), 'a');
const browser = await launch({ bin: process.env.CHROMIUM || '/usr/bin/chromium', userDataDir: join(SHOTS, '.profile'), log });
console.log(`chromium pid ${browser.pid}`);
// The stack's teardown stops what is listed in its pid directory, if we die first.
if (process.env.CHROMIUM_PIDFILE) writeFileSync(process.env.CHROMIUM_PIDFILE, `${browser.pid}\n`);
let rc = 0;
let failShot = async () => {};
let fetchHandler = null; // answers requests the DevTools Fetch domain paused
try {
  const page = await browser.newPage();
  page.on('Runtime.exceptionThrown', p => errors.push(`exception: ${p.exceptionDetails.exception ? p.exceptionDetails.exception.description : p.exceptionDetails.text}`));
  page.on('Runtime.consoleAPICalled', p => { if (p.type === 'error' || p.type === 'assert') errors.push(`console.${p.type}: ${p.args.map(a => a.value ?? a.description).join(' ')}`); });
  page.on('Log.entryAdded', p => {
    const e = p.entry;
    if (e.level !== 'error') return;
    if (e.source === 'network' && e.url && [...expected404, ...allow404].some(re => re.test(e.url))) return;
    errors.push(`log ${e.source}: ${e.text} ${e.url || ''}`);
  });
  page.on('Fetch.requestPaused', p => fetchHandler && fetchHandler(p));
  await page.send('Runtime.enable');
  await page.send('Log.enable');
  await page.send('Page.enable');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });

  const shot = async name => {
    const { data } = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
    writeFileSync(join(SHOTS, `${name}.png`), Buffer.from(data, 'base64'));
  };
  failShot = () => shot('99-failure');
  const go = async hash => {
    await page.eval(`location.hash = ${JSON.stringify(hash)}`);
    await sleep(100);
  };
  const key = async (k, code, vk) => {
    for (const type of ['keyDown', 'keyUp'])
      await page.send('Input.dispatchKeyEvent', { type, key: k, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk, text: type === 'keyDown' && k === 'Enter' ? '\r' : undefined });
  };
  const hover = async sel => {
    const r = await page.eval(`(() => { const e = document.querySelector(${JSON.stringify(sel)}); if (!e) return null; e.scrollIntoView({block: 'center', inline: 'center'}); const b = e.getBoundingClientRect(); return {x: b.left + b.width / 2, y: b.top + b.height / 2}; })()`);
    if (!r) throw new Error(`nothing to hover: ${sel}`);
    await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: 1, y: 1 });
    await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: r.x, y: r.y });
  };

  // -- the page itself: headers a browser enforces
  await page.send('Page.navigate', { url: `${URL}/ui/` });
  await page.until(`document.querySelector('#token')`, 'the sign-in form');
  await shot('01-signin');
  // no inline script may run: the CSP blocks it (and the page has none)
  const blocked = await page.eval(`(() => { try { const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s); } catch (e) {} return window.__inline === undefined; })()`);
  if (!blocked) throw new Error('an inline script ran: the Content-Security-Policy does not block it');
  await sleep(300);
  errors.length = 0; // the CSP report of that attempt is expected
  ok('sign-in form shown; the Content-Security-Policy blocks inline script');

  // -- sign in with the keyboard: type the token, press Enter
  await page.eval(`document.querySelector('#token').focus()`);
  await page.send('Input.insertText', { text: TOKEN });
  await key('Enter', 'Enter', 13);
  const who = await page.until(`document.querySelector('#who-role') && [document.querySelector('#who-user').textContent, document.querySelector('#who-tenant').textContent, document.querySelector('#who-role').textContent].join(' ')`, 'who am I');
  if (who !== 'alice acme admin') throw new Error(`header shows "${who}", expected "alice acme admin"`);
  const stored = await page.eval(`[sessionStorage.getItem('drover.token') !== null, localStorage.length, document.cookie]`);
  if (!stored[0] || stored[1] !== 0 || stored[2] !== '') throw new Error(`token storage: ${JSON.stringify(stored)}`);
  ok(`signed in: ${who}; the token is in sessionStorage only`);

  // -- clusters: rendered once (the sign-in's navigation and its hash change used to race,
  // each render adding its own list to the page)
  await page.until(`document.querySelectorAll('a.cluster-link').length >= 2`, 'the clusters list');
  const settled = `(() => { const m = document.querySelector('main'); return m.dataset.started && m.dataset.started === m.dataset.settled && !!document.querySelector('main .view[data-done]'); })()`;
  await page.until(settled, 'every render of the page to finish');
  const once = await page.eval(`({ h1: [...document.querySelectorAll('main h1')].map(e => e.textContent), tables: document.querySelectorAll('main table').length, forms: document.querySelectorAll('#new-form').length, views: document.querySelectorAll('main > .view').length })`);
  if (once.h1.length !== 1 || once.h1[0] !== 'Clusters' || once.tables !== 1 || once.forms !== 1 || once.views !== 1)
    throw new Error(`the clusters list after sign-in is not rendered once: ${JSON.stringify(once)}`);
  await shot('02-clusters');
  ok('clusters list, rendered once after sign-in');
  // a new cluster: the dry run first, then Create goes to its job
  await page.eval(`(() => { document.querySelector('#new-name').value = 'fresh'; document.querySelector('#new-nodes').value = '2'; })()`);
  await page.eval(`document.querySelector('#new-form button[type=submit]').click()`);
  const dry = await page.until(`document.querySelector('#new-form .preview h3') && document.querySelector('#new-form .preview').textContent`, 'the dry run');
  if (!/Dry run: \d+ tasks/.test(dry) || !/small/.test(dry)) throw new Error(`dry run: ${dry}`);
  // the same diff as `drover cluster create --dry-run`: a + line a node, then the plan's summary
  const createLines = await page.eval(`[...document.querySelectorAll('#new-form pre.plan-diff .dl')].map(e => e.textContent.trim())`);
  if (createLines.filter(l => /^\+ node node-\d+  small\/img  /.test(l)).length !== 2 ||
      !createLines.some(l => /^plan: 2 nodes, \d+ tasks \((.*, )?create 2(, .*)?\), \d+ stages, critical path \d+ tasks$/.test(l)))
    throw new Error(`the create's diff lines: ${JSON.stringify(createLines)}`);
  await shot('02b-create-dry-run');
  await page.eval(`document.querySelector('#new-create').click()`);
  await page.until(`location.hash.startsWith('#/jobs/') && document.querySelector('#job-status')`, 'the new job\'s page');
  ok(`dry run shown before create ("${dry.replace(/\s+/g, ' ').slice(0, 60)}..."), then the new job's page`);
  await go(`#/clusters/${CLUSTER}`);
  await page.until(`document.querySelector('h1') && document.querySelectorAll('main table')[0] && document.querySelectorAll('main table')[0].querySelectorAll('tbody tr').length >= 2 && document.querySelectorAll('a.job-link').length >= 1`, 'the cluster view with nodes and jobs');
  const hw = await page.eval(`document.querySelectorAll('main table')[0].querySelector('tbody tr').textContent`);
  if (!/small/.test(hw) || !/img/.test(hw)) throw new Error(`node row without hardware and image: ${hw}`);
  // each address once: the sleep plugin's nodes report one address as hostname, access and bind
  const addrs = await page.eval(`[...document.querySelectorAll('main table')[0].querySelectorAll('tbody tr')].map(r => r.lastElementChild.textContent)`);
  for (const a of addrs) {
    const words = a.split(' ').filter(Boolean);
    if (!words.length || new Set(words).size !== words.length) throw new Error(`Addresses column "${a}" is empty or repeats an address`);
  }
  // the template's link, its macro expanded against the nodes
  const link = await page.until(`document.querySelector('#cluster-links a.ext-link') && document.querySelector('#cluster-links a.ext-link').getAttribute('href')`, 'the template\'s web link');
  if (link !== 'http://192.0.2.1:8080/') throw new Error(`the template's web link reads ${link}`);
  const dbLink = await page.eval(`document.querySelector('#cluster-links code') && document.querySelector('#cluster-links code').textContent`);
  if (!/^node-\d+\.sleep\.invalid:5432$/.test(dbLink || '')) throw new Error(`the template's database link reads ${dbLink}`);
  // its snapshots: one per successful operation; opening one reads its nodes
  await page.until(`document.querySelectorAll('#snapshots details.snapshot').length >= 1`, 'the cluster\'s snapshots');
  const snapSummary = await page.eval(`document.querySelector('#snapshots details.snapshot summary').textContent`);
  if (!/after job #\d+ \(create\)/.test(snapSummary)) throw new Error(`snapshot summary: ${snapSummary}`);
  await page.eval(`document.querySelector('#snapshots details.snapshot').open = true`);
  const snapRow = await page.until(`document.querySelector('#snapshots details.snapshot tbody tr') && document.querySelector('#snapshots details.snapshot tbody tr').textContent`, 'a snapshot\'s nodes');
  if (!/small/.test(snapRow)) throw new Error(`snapshot node row: ${snapRow}`);
  await shot('03-cluster');
  ok(`a cluster: nodes with hardware and image, job history, snapshots ("${snapSummary}", opened: its nodes)`);
  // an operation the API refuses: its error shows in the dialog (the cluster has that version)
  await page.eval(`[...document.querySelectorAll('section.ops button')].find(b => b.textContent === 'Upgrade').click()`);
  await page.until(`document.querySelector('dialog.confirm[open] #op-input')`, 'the upgrade dialog');
  allow404.push(/\/upgrade$/); // the refusal (422) is a failed request in the console
  await page.eval(`document.querySelector('dialog.confirm[open] #op-plan-button').click()`);
  const refused = await page.until(`document.querySelector('dialog.confirm[open] .error').textContent`, 'the upgrade refused');
  if (await page.eval(`!document.querySelector('#op-apply').disabled || !!document.querySelector('#op-plan pre')`))
    throw new Error('a refused dry run left a plan to apply');
  await page.eval(`[...document.querySelectorAll('dialog.confirm[open] button')].find(b => b.textContent === 'Cancel').click()`);
  ok(`an operation the API refuses shows why in its dialog, with nothing to apply: "${refused}"`);
  // configure: the dialog's dry run shows the config key old -> new, the plan and its rollback
  const diffOf = `[...document.querySelectorAll('dialog.confirm[open] #op-plan pre.plan-diff .dl')].map(e => e.textContent.trim())`;
  await page.eval(`[...document.querySelectorAll('section.ops button')].find(b => b.textContent === 'Configure').click()`);
  await page.until(`document.querySelector('dialog.confirm[open] #op-mode')`, 'the configure dialog');
  await page.eval(`(() => { const i = document.querySelector('#op-input'); i.value = '{"sleep": {"duration_ms": 1, "password": "s3cret"}}'; i.dispatchEvent(new Event('input')); document.querySelector('#op-plan-button').click(); })()`);
  const conf = await page.until(`document.querySelector('#op-plan pre.plan-diff') && !document.querySelector('#op-apply').disabled && ${diffOf}`, 'the configure\'s plan');
  if (!conf.includes('~ config sleep.duration_ms: 0 -> 1') || !conf.includes('+ config sleep.password: "********"') ||
      (await page.eval(`document.querySelector('dialog.confirm[open] #op-plan').textContent.includes('s3cret')`)) || !conf.some(l => /^plan: \d+ tasks \(.*configure \d+.*\), \d+ stages, critical path \d+ tasks, /.test(l)) ||
      !conf.some(l => /^rollback if it fails at its end: /.test(l)) || !/^cluster \d+ \(done\): configure, revision [0-9a-f]+$/.test(conf[0]))
    throw new Error(`the configure's diff: ${JSON.stringify(conf)}`);
  await shot('03b-configure-plan');
  // changing the input takes the plan away until it is shown again
  await page.eval(`(() => { const i = document.querySelector('#op-input'); i.value = '{"sleep": {"duration_ms": 2}}'; i.dispatchEvent(new Event('input')); })()`);
  if (!(await page.eval(`document.querySelector('#op-apply').disabled && !document.querySelector('#op-plan pre')`)))
    throw new Error('the configure dialog kept a plan to apply after its input changed');
  await page.eval(`[...document.querySelectorAll('dialog.confirm[open] button')].find(b => b.textContent === 'Cancel').click()`);
  ok(`configure's dialog shows its dry run as the CLI's diff (${conf.length} lines: "${conf[1]}", "${conf.find(l => l.startsWith('plan:'))}"), and a changed input asks for a new one`);
  // expand: a target size, one more than the cluster's by default; its plan adds a node
  await page.eval(`[...document.querySelectorAll('section.ops button')].find(b => b.textContent === 'Expand').click()`);
  await page.until(`document.querySelector('dialog.confirm[open] #op-input') && document.querySelector('#op-input').value === '4'`, 'the expand dialog, at 4 nodes');
  await page.eval(`document.querySelector('#op-plan-button').click()`);
  const exp = await page.until(`document.querySelector('#op-plan pre.plan-diff') && !document.querySelector('#op-apply').disabled && ${diffOf}`, 'the expand\'s plan');
  if (!exp.includes('~ size 3 -> 4') || !exp.some(l => /^\+ node node-4  small\/img  /.test(l)) || !exp.some(l => /^rollback if it fails at its end: \d+ tasks/.test(l)))
    throw new Error(`the expand's diff: ${JSON.stringify(exp)}`);
  await page.eval(`[...document.querySelectorAll('dialog.confirm[open] button')].find(b => b.textContent === 'Cancel').click()`);
  ok(`expand's dialog: "${exp[1]}", "${exp[2]}", "${exp[exp.length - 1]}"`);
  // delete: its plan at once, every node removed
  await page.eval(`document.querySelector('section.ops button.danger').click()`);
  const del = await page.until(`document.querySelector('dialog.confirm[open] #op-plan pre.plan-diff') && !document.querySelector('#op-apply').disabled && ${diffOf}`, 'the delete\'s plan');
  if (!del.includes('~ size 3 -> 0') || del.filter(l => /^- node node-[123]  /.test(l)).length !== 3 || !/^cluster \d+ \(done\): delete, /.test(del[0]))
    throw new Error(`the delete's diff: ${JSON.stringify(del)}`);
  await page.eval(`[...document.querySelectorAll('dialog.confirm[open] button')].find(b => b.textContent === 'Cancel').click()`);
  ok(`delete's dialog: "${del[1]}", ${del.filter(l => l.startsWith('- node')).length} "- node" lines, "${del.find(l => l.startsWith('plan:'))}"`);
  // restart: its plan at once; the cluster changed through the API before Apply: 409, a
  // clear message and the new plan; Apply again starts the job
  await page.eval(`[...document.querySelectorAll('section.ops button')].find(b => b.textContent === 'Restart').click()`);
  const rs = await page.until(`document.querySelector('dialog.confirm[open] #op-plan pre.plan-diff') && !document.querySelector('#op-apply').disabled && ${diffOf}`, 'the restart\'s plan');
  if (!rs.some(l => /^plan: \d+ tasks \((?=.*stop \d+)(?=.*start \d+).*\), \d+ stages, critical path \d+ tasks/.test(l)) || !rs.some(l => /^rollback/.test(l)))
    throw new Error(`the restart's diff: ${JSON.stringify(rs)}`);
  const rev1 = await page.eval(`document.querySelector('#op-plan').dataset.revision`);
  await shot('03c-confirm-restart');
  const apiCall = async (method, path, body) => {
    const r = await fetch(`${URL}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
    return j;
  };
  const changed = await apiCall('POST', `/v1/clusters/${CLUSTER}/configure`, { config: { sleep: { duration_ms: 1 } }, mode: 'merge' });
  for (let sum = await apiCall('GET', `/v1/jobs/${changed.job.id}?tasks=none`); sum.status !== 'succeeded';) {
    if (['rolled-back', 'failed', 'cancelled', 'needs-operator'].includes(sum.status)) throw new Error(`the configure job ${changed.job.id} ended ${sum.status}`);
    sum = await apiCall('GET', `/v1/jobs/${changed.job.id}?tasks=none&wait=20&revision=${sum.revision}`); // held until it changes
  }
  allow404.push(/\/restart$/); // the 409 is a failed request in the console
  await page.eval(`document.querySelector('#op-apply').click()`);
  await page.until(`document.querySelector('dialog.confirm[open]').dataset.conflicts === '1' && !document.querySelector('#op-apply').disabled`, 'the 409 and the new plan');
  const conflict = await page.eval(`({ note: document.querySelector('#op-note').textContent, rev: document.querySelector('#op-plan').dataset.revision, hash: location.hash, lines: ${diffOf} })`);
  if (!/changed since this plan was made, so nothing was applied/.test(conflict.note) || conflict.rev === rev1 || conflict.hash.startsWith('#/jobs/') || !conflict.lines.length)
    throw new Error(`after the cluster changed: ${JSON.stringify(conflict)}`);
  await shot('03d-restart-conflict');
  await page.eval(`document.querySelector('#op-apply').click()`);
  await page.until(`location.hash.startsWith('#/jobs/') && document.querySelector('h1').textContent.includes('restart')`, 'the restart job\'s page');
  ok(`restart: its plan shown in the dialog; the cluster changed by job ${changed.job.id} before Apply: refused (409), "${conflict.note.slice(0, 60)}...", the new plan (revision ${rev1} -> ${conflict.rev}); Apply started the job`);

  // -- a running job: the DAG changes while we watch
  await go(`#/jobs/${JOB}`);
  await page.until(`document.querySelectorAll('svg.dag g.task').length > 0`, 'the job DAG');
  const states = `JSON.stringify([...document.querySelectorAll('svg.dag g.task')].map(g => g.getAttribute('class')))`;
  const before = await page.eval(states);
  const crit = await page.eval(`document.querySelectorAll('svg.dag g.task.crit').length`);
  if (!crit) throw new Error('no task is marked on the critical path');
  // labels show the node first: the id from its start, an ellipsis at the end when cut, the
  // whole id in the box's title
  const badLabels = await page.eval(`[...document.querySelectorAll('svg.dag g.task')].map(g => ({ id: g.dataset.id, label: g.querySelectorAll('text')[1].textContent, title: g.querySelector('title') && g.querySelector('title').textContent })).filter(x => x.title !== x.id || !(x.label === x.id || (x.label.endsWith('…') && x.id.startsWith(x.label.slice(0, -1)))) || !x.label.startsWith(x.id.split('/')[0].slice(0, 6)))`);
  if (badLabels.length) throw new Error(`task boxes whose label hides the node or has no title: ${JSON.stringify(badLabels.slice(0, 3))}`);
  const cut = await page.eval(`[...document.querySelectorAll('svg.dag g.task text:nth-of-type(2)')].filter(t => t.textContent.endsWith('…')).length`);
  ok(`task labels start with their node (${cut} cut at the end), the whole id in a title`);
  await shot('04-job-running');
  // a waiting task explains itself on hover
  await page.until(`document.querySelector('svg.dag g.task.st-waiting')`, 'a waiting task');
  await hover('svg.dag g.task.st-waiting');
  const why = await page.until(`!document.querySelector('#tip').hidden && document.querySelector('#tip .why') && document.querySelector('#tip').textContent`, 'the tooltip of a waiting task');
  if (!/why it waits \((dependency|node|strategy|queued|ready)\): /.test(why)) throw new Error(`tooltip without a reason: ${why}`);
  await shot('05-job-why');
  ok(`hovering a waiting task: "${why.replace(/\s+/g, ' ').slice(0, 120)}"`);
  await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: 2, y: 2 });
  // the same by keyboard: focus shows it
  const focusWhy = await page.eval(`(() => { const g = document.querySelector('svg.dag g.task.st-waiting') || document.querySelector('svg.dag g.task'); g.focus(); const t = document.querySelector('#tip'); return !t.hidden && t.textContent; })()`);
  if (!focusWhy) throw new Error('focusing a task shows no tooltip');
  await page.eval(`document.activeElement.blur()`);
  ok('focusing a task shows its tooltip');
  // and with the keyboard alone: from the top of the page, Tab until a task has the focus
  await page.eval(`document.querySelector('a.brand').focus()`);
  let tabs = 0;
  for (; tabs < 80; tabs++) {
    await key('Tab', 'Tab', 9);
    if (await page.eval(`!!(document.activeElement && document.activeElement.closest('svg.dag g.task'))`)) break;
  }
  const kbd = await page.eval(`!document.querySelector('#tip').hidden && document.querySelector('#tip').textContent`);
  if (tabs === 80 || !kbd) throw new Error('Tab never reached a task, or its tooltip did not show');
  await page.eval(`document.activeElement.blur()`);
  ok(`keyboard: ${tabs + 1} Tab presses reach a task, and its tooltip shows`);
  // task logs, live: the latest task's attempts, followed while the job runs
  const firstLog = await page.until(`document.querySelector('#logs #log-out .attempt-list li') && document.querySelector('#log-out').dataset.task`, 'the task logs');
  const opts = await page.eval(`document.querySelectorAll('#log-task option').length`);
  if (!opts) throw new Error('the task logs offer no task');
  await page.until(`document.querySelector('#log-out').dataset.task !== ${JSON.stringify(firstLog)} && document.querySelector('#log-out .attempt-list')`, 'the task logs to follow the next task', 60000);
  const nextLog = await page.eval(`document.querySelector('#log-out').dataset.task`);
  ok(`task logs live: followed ${firstLog} then ${nextLog} while the job ran`);
  // the live output: every attempt as it ends (attempts?since=, a cursor), growing while the job runs
  const feed0 = await page.until(`document.querySelectorAll('#log-feed li').length`, 'the live output');
  const st0 = await page.eval(`document.querySelector('#job-status .badge').textContent`);
  await page.until(`document.querySelectorAll('#log-feed li').length > ${feed0}`, 'the live output to grow', 60000);
  if (st0 !== 'running') throw new Error(`the job was ${st0} before its live output grew`);
  ok(`live output: ${feed0} attempt(s) ended when first seen, more appended while the job ran`);
  await page.until(`${states} !== ${JSON.stringify(before)}`, 'the DAG to change state', 60000);
  await shot('06-job-progressed');
  ok('the DAG changed state while we watched (no reload)');
  const done = await page.until(`document.querySelector('#job-status .badge') && document.querySelector('#job-status .badge').textContent === 'succeeded' && document.querySelectorAll('svg.dag g.task.st-succeeded, svg.dag g.task.st-skipped').length === document.querySelectorAll('svg.dag g.task').length`, 'the job to succeed on the page', 120000);
  if (!done) throw new Error('job did not finish');
  await shot('07-job-succeeded');
  ok('the job reached succeeded on the page, every task succeeded (or skipped: anchors)');
  // at the end the live output holds each attempt the job ran, once, with its stderr tail
  const ended = await page.eval(`fetch('/v1/jobs/${JOB}/attempts?since=0&limit=500', { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('drover.token') } }).then(x => x.json()).then(r => r.items.filter(a => a.ended_at).length)`);
  await page.until(`document.querySelectorAll('#log-feed li').length === ${ended}`, `the live output to hold the job's ${ended} attempts`);
  const feed = await page.eval(`(() => { const li = [...document.querySelectorAll('#log-feed li')]; return { shown: li.length, seqs: new Set(li.map(l => l.dataset.seq)).size, tails: li.filter(l => /sleep: /.test((l.querySelector('pre.tail') || {}).textContent || '')).length }; })()`);
  if (feed.seqs !== feed.shown || !feed.tails) throw new Error(`the live output at the end: ${JSON.stringify(feed)}`);
  ok(`live output at the end: all ${feed.shown} attempts once, ${feed.tails} with the plugin's stderr tail`);

  // -- a large job: grouped, bounded
  await go(`#/jobs/${BIG}`);
  await page.until(`document.querySelector('#dag .groups[data-mode=service]') && document.querySelectorAll('details.group').length > 0`, 'the grouped view');
  const dom1 = await page.eval(`document.querySelectorAll('#dag *').length`);
  await page.eval(`document.querySelector('details.group summary').click()`);
  await page.until(`document.querySelectorAll('details.group[open] .chip').length > 0`, 'an expanded group');
  await page.eval(`(() => { const s = document.querySelector('#group-mode'); s.value = 'node'; s.dispatchEvent(new Event('change')); })()`);
  await page.until(`document.querySelector('#dag .groups[data-mode=node]') && document.querySelectorAll('details.group').length > 3`, 'groups by node');
  const dom2 = await page.eval(`document.querySelectorAll('#dag *').length`);
  const ntasks = await page.eval(`Number(document.querySelector('#progress').max)`);
  if (dom1 > 2000 || dom2 > 2000) throw new Error(`grouped view of ${ntasks} tasks used ${dom1}/${dom2} elements`);
  await page.eval(`document.querySelector('details.group summary').click()`);
  await page.until(`document.querySelectorAll('details.group[open] .chip').length > 0`, 'an expanded node group');
  await shot('08-job-large-grouped');
  ok(`a ${ntasks}-task job shown grouped in ${dom1} (by service) and ${dom2} (by node) elements`);

  // -- a job that failed and rolled back: the failed task's attempts, the rollback plan
  await go(`#/jobs/${FAILED}`);
  await page.until(`document.querySelector('#rollback svg.dag g.task') && document.querySelector('#failed details.failed-task[data-id="node-2/app/install"] .attempt-list li')`, 'failures and the rollback plan');
  const story = await page.eval(`document.querySelector('#failed details.failed-task[data-id="node-2/app/install"]').textContent`);
  if (!/attempt 1/.test(story) || !/failed/.test(story)) throw new Error(`failed task without its attempts: ${story}`);
  await page.eval(`document.querySelector('#failed').scrollIntoView()`);
  await shot('08b-job-rolled-back');
  ok(`a rolled-back job: the failed task's attempts ("${story.replace(/\s+/g, ' ').slice(0, 100)}") and the rollback plan`);

  // -- fleet
  await go('#/fleet');
  await page.until(`document.querySelectorAll('#members tbody tr').length >= 1 && document.querySelectorAll('#workers tbody tr').length >= 1 && document.querySelector('#queues table')`, 'the fleet view');
  const members = await page.eval(`document.querySelector('#members tbody').textContent`);
  if (!/droverd-1/.test(members) || !/%/.test(members)) throw new Error(`members: ${members}`);
  await page.until(`[...document.querySelectorAll('#members a.owned')].some(a => a.textContent.trim() === '#${SLOW}')`, `job ${SLOW} owned by a member`, 15000);
  await shot('09-fleet');
  ok(`fleet: members with ring share and owned job #${SLOW}, workers, queues`);

  // -- the fleet with the drain API (ops branch) and recommended workers (metrics branch),
  // answered by the browser itself (DevTools Fetch domain): the buttons appear, a drain is
  // confirmed and posted, the chart draws the samples
  let recs = [2, 5, 3], drained = '';
  const fleetFetch = p => {
    const u = p.request.url;
    let code = 200, body = '';
    if (/_probe\/drain$/.test(u)) {
      code = 405;
      body = JSON.stringify({ error: { code: 'method-not-allowed', message: 'x' } });
    } else if (/\/drain$/.test(u) && p.request.method === 'POST') {
      drained = u;
      code = 202;
      body = JSON.stringify({ member: 'droverd-1', want: 'drain' });
    } else {
      body = JSON.stringify({ queues: [{ tenant: 'acme', class: 'default', length: 40, claimed: 8, oldest_age_ms: 1200,
        arrival_per_s: 2.5, mean_task_s: 3.2, mean_task_measured: true, recommended_workers: recs.length > 1 ? recs.shift() : recs[0] }] });
    }
    page.send('Fetch.fulfillRequest', { requestId: p.requestId, responseCode: code,
      responseHeaders: [{ name: 'Content-Type', value: 'application/json' }], body: Buffer.from(body).toString('base64') }).catch(() => {});
  };
  fetchHandler = fleetFetch;
  await page.send('Fetch.enable', { patterns: [{ urlPattern: '*/v1/queues' }, { urlPattern: '*/_probe/drain' }, { urlPattern: '*/v1/workers/*/drain' }] });
  page.on('Page.javascriptDialogOpening', () => page.send('Page.handleJavaScriptDialog', { accept: true }).catch(() => {}));
  await go('#/clusters');
  await go('#/fleet');
  await page.until(`[...document.querySelectorAll('#workers button')].some(b => b.textContent === 'Drain') && document.querySelector('#members-drain-help')`, 'worker drain buttons');
  if (await page.eval(`document.querySelectorAll('#members button').length`) !== 0)
    throw new Error('a tenant admin is offered to drain a droverd (a superadmin\'s act)');
  await page.until(`document.querySelector('#queues .rec-now') && document.querySelector('#queues .rec-now').textContent === '3'`, 'three samples of recommended workers', 20000);
  // the view keeps polling: a sample of the real queue may come before the interception and
  // more samples of 3 after the three we scripted. The line must hold 2, 5, 3 in a row
  // (y grows downwards) with every later point at 3.
  const ys = await page.eval(`document.querySelector('#queues svg.spark polyline').getAttribute('points').split(' ').map(p => +p.split(',')[1])`);
  const at = ys.findIndex((y, i) => i + 2 < ys.length && ys[i + 1] < ys[i + 2] && ys[i + 2] < y && ys.slice(i + 3).every(z => z === ys[i + 2]));
  if (at < 0) throw new Error(`the chart's points do not draw 2, 5, 3: y = ${ys.join(' ')}`);
  await shot('09b-fleet-drain-and-chart');
  await page.eval(`[...document.querySelectorAll('#workers button')].find(b => b.textContent === 'Drain').click()`);
  const t1 = Date.now();
  while (!drained && Date.now() - t1 < 5000) await sleep(100);
  if (!/\/v1\/workers\/[^/]+\/drain$/.test(drained)) throw new Error(`no worker drain posted (${drained})`);
  await go('#/clusters');
  await page.until(`document.querySelectorAll('a.cluster-link').length >= 2`, 'clusters again');
  await page.send('Fetch.disable');
  fetchHandler = null;
  ok('fleet with the drain and autoscaling APIs: worker drain buttons (none for droverd: a superadmin\'s), a confirmed drain posted, recommended workers charted (2, 5, 3)');

  // -- audit with a filter
  await go('#/audit');
  await page.until(`document.querySelectorAll('main table tbody tr').length > 3`, 'the audit log');
  const all = await page.eval(`document.querySelectorAll('main table tbody tr').length`);
  await page.eval(`(() => { const s = document.querySelector('#audit-action'); s.value = 'cluster.create'; s.dispatchEvent(new Event('change')); })()`);
  const rows = await page.until(`(() => { const r = [...document.querySelectorAll('main table tbody tr')]; return r.length && r.every(x => /cluster\\.create/.test(x.textContent)) && r.length; })()`, 'the filtered audit log');
  if (!(rows < all)) throw new Error(`filter kept ${rows} of ${all}`);
  await shot('10-audit');
  ok(`audit log: ${all} entries, ${rows} after filtering on cluster.create`);

  // -- another tenant's cluster is not reachable
  allow404 = [new RegExp(`/v1/clusters/${OTHER}$`), new RegExp(`/v1/jobs\\?cluster=${OTHER}$`)];
  await go(`#/clusters/${OTHER}`);
  const nf = await page.until(`document.querySelector('#not-found') && document.querySelector('#not-found').textContent`, 'the not-found message');
  const leaked = await page.eval(`document.querySelector('main').textContent.includes('other-secret')`);
  if (leaked) throw new Error('the other tenant\'s cluster name is on the page');
  await shot('11-other-tenant');
  ok(`another tenant's cluster: "${nf}"`);

  // -- a phone-sized window
  await page.send('Emulation.setDeviceMetricsOverride', { width: 390, height: 844, deviceScaleFactor: 2, mobile: true });
  await go(`#/jobs/${JOB}`);
  await page.until(`document.querySelectorAll('svg.dag g.task').length > 0`, 'the job on a phone');
  const overflow = await page.eval(`document.documentElement.scrollWidth - document.documentElement.clientWidth`);
  if (overflow > 2) throw new Error(`the page is ${overflow}px wider than a phone`);
  await shot('12-phone-job');
  await go('#/clusters');
  await page.until(`document.querySelectorAll('a.cluster-link').length >= 2`, 'clusters on a phone');
  await shot('13-phone-clusters');
  ok('phone-sized window: no horizontal overflow');

  // -- a 140,007-task job (10,000 nodes x 14 tasks, the size of a 10,000-node
  // hadoop-distributed create), served to the page by the browser itself (the DevTools
  // Fetch domain answers /v1/jobs/990001*): the page stays bounded and quick
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
  const huge = hugeJob(990001, 10000, 14);
  const { tasks: hugeTasks, ...hugeSummary } = huge;
  const sumBody = Buffer.from(JSON.stringify({ ...hugeSummary, revision: 'r1' })).toString('base64');
  let fullReads = 0;
  fetchHandler = p => {
    const u = new globalThis.URL(p.request.url);
    let body;
    if (u.pathname.endsWith('/tasks/groups')) body = Buffer.from(JSON.stringify(taskGroups(hugeTasks, u.searchParams))).toString('base64');
    else if (u.pathname.endsWith('/tasks')) body = Buffer.from(JSON.stringify(tasksPage(hugeTasks, u.searchParams))).toString('base64');
    else if (u.pathname.endsWith('/attempts')) body = Buffer.from(JSON.stringify({ items: [] })).toString('base64');
    else if (u.searchParams.get('tasks') === 'none') body = sumBody;
    else { fullReads++; body = Buffer.from(JSON.stringify(huge)).toString('base64'); }
    page.send('Fetch.fulfillRequest', { requestId: p.requestId, responseCode: 200,
      responseHeaders: [{ name: 'Content-Type', value: 'application/json' }], body }).catch(() => {});
  };
  await page.send('Fetch.enable', { patterns: [{ urlPattern: '*/v1/jobs/990001*' }] });
  const t0 = Date.now();
  await go('#/jobs/990001');
  await page.until(`document.querySelectorAll('details.group').length > 0 && /140007 tasks/.test(document.querySelector('#dag h2').textContent)`, 'the 140,007-task job', 60000);
  const shownMs = Date.now() - t0;
  await page.eval(`(() => { const s = document.querySelector('#group-mode'); s.value = 'node'; s.dispatchEvent(new Event('change')); })()`);
  await page.until(`document.querySelector('#dag .groups[data-mode=node]') && document.querySelectorAll('details.group').length >= 60`, 'groups by node', 30000);
  await page.eval(`document.querySelector('details.group summary').click()`);
  await page.until(`document.querySelectorAll('details.group[open] .chip').length > 0`, 'an expanded node');
  const hugeDom = await page.eval(`document.querySelectorAll('*').length`);
  if (hugeDom > 3000) throw new Error(`the 140,007-task job put ${hugeDom} elements on the page`);
  if (fullReads) throw new Error(`the page read the 140,007-task job in full ${fullReads} time(s) instead of its pages`);
  await shot('14-job-140k-tasks');
  await go('#/clusters'); // leaving the view ends its polling before the real server answers again
  await page.until(`document.querySelectorAll('a.cluster-link').length >= 2`, 'clusters again');
  await page.send('Fetch.disable');
  ok(`a 140,007-task job: shown in ${shownMs} ms through the paged API (never read whole), ${hugeDom} elements on the whole page`);

  // -- signed out at a job's address, signed in (the page goes to that job), and away at
  // once to the clusters while the job still loads (its answer held by the browser): the
  // clusters stay, the job's late render never shows
  await page.eval(`document.querySelector('#signout').click()`);
  await page.until(`document.querySelector('#token')`, 'signed out');
  await go(`#/jobs/${SLOW}`);
  await page.until(`document.querySelector('#token')`, 'the sign-in form at a job\'s address');
  let held = null;
  fetchHandler = p => { // hold the job view's first read (its summary), let the rest through
    if (!held && p.request.url.endsWith(`/v1/jobs/${SLOW}?tasks=none`)) held = p.requestId;
    else page.send('Fetch.continueRequest', { requestId: p.requestId }).catch(() => {});
  };
  await page.send('Fetch.enable', { patterns: [{ urlPattern: `*/v1/jobs/${SLOW}*` }] });
  await page.eval(`document.querySelector('#token').focus()`);
  await page.send('Input.insertText', { text: TOKEN });
  await key('Enter', 'Enter', 13);
  const th = Date.now();
  while (!held && Date.now() - th < 20000) await sleep(100);
  if (!held) throw new Error(`signing in at #/jobs/${SLOW} did not load that job`);
  await page.eval(`location.hash = '#/clusters'`);
  await page.until(`document.querySelector('main .view[data-done] a.cluster-link')`, 'the clusters after navigating away');
  await page.send('Fetch.continueRequest', { requestId: held });
  await page.until(settled, 'the held job render to finish');
  const after = await page.eval(`({ hash: location.hash, job: !!document.querySelector('main #job-status'), h1: [...document.querySelectorAll('main h1')].map(e => e.textContent) })`);
  if (after.hash !== '#/clusters' || after.job || after.h1.join() !== 'Clusters')
    throw new Error(`navigating right after sign-in: ${JSON.stringify(after)}`);
  await page.send('Fetch.disable');
  fetchHandler = null;
  ok('signed in at a job\'s address, navigated away at once: the clusters show, the late job render does not');

  // -- a user: his own clusters only, no fleet or audit; signing out forgets the token
  await page.eval(`document.querySelector('#signout').click()`);
  await page.until(`document.querySelector('#token') && sessionStorage.getItem('drover.token') === null`, 'signed out');
  await page.eval(`document.querySelector('#token').focus()`);
  await page.send('Input.insertText', { text: USER_TOKEN });
  await key('Enter', 'Enter', 13);
  await page.until(`document.querySelector('#who-role') && document.querySelector('#who-role').textContent === 'user'`, 'signed in as a user');
  await page.until(`document.querySelector('main h1') && document.querySelector('main h1').textContent === 'Clusters' && document.querySelector('main table')`, 'the user\'s clusters');
  const userView = await page.eval(`({ links: document.querySelectorAll('a.cluster-link').length, fleet: document.querySelector('nav a[data-view=fleet]').hidden, audit: document.querySelector('nav a[data-view=audit]').hidden })`);
  if (userView.links !== 0 || !userView.fleet || !userView.audit) throw new Error(`a user sees ${JSON.stringify(userView)}`);
  allow404.push(new RegExp(`/v1/clusters/${CLUSTER}$`), new RegExp(`/v1/jobs\\?cluster=${CLUSTER}$`));
  await go(`#/clusters/${CLUSTER}`);
  await page.until(`document.querySelector('#not-found')`, 'alice\'s cluster hidden from bob');
  await shot('15-user');
  ok('a user: no clusters of others (alice\'s answers not found), no fleet or audit links');

  await sleep(300);
  if (errors.length) throw new Error(`console errors:\n  ${errors.join('\n  ')}`);
  ok('no console errors');
} catch (e) {
  console.error(`FAIL: ${e.message}`);
  rc = 1;
  try { await failShot(); } catch (e2) { /* the page is gone */ }
} finally {
  await browser.close();
}
process.exit(rc);
