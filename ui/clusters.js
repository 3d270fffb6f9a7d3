// clusters: the list (with a form for a new cluster, its dry run shown as a diff before it is
// created) and one cluster: nodes with hardware, image, services and addresses; job history;
// snapshots; the operations the caller's role allows, each in a dialog that shows its plan
// as a diff and applies exactly that plan.
import { h, clear, add, fill, table, badge, fmtTime } from './dom.js';
import { get, post } from './api.js';
import { diffLines, previewLines, diffBlock } from './plan.js';

// Each operation's input: a count, a list of services, a JSON object, or an optional number.
// Expand and shrink take the node count after them (a target, as `drover cluster expand --to`),
// offered one above or below the cluster's size.
const OPS = [
  { op: 'expand', label: 'Expand', field: 'size', kind: 'count', help: 'node count after it', start: c => (c.size || 0) + 1 },
  { op: 'shrink', label: 'Shrink', field: 'size', kind: 'count', help: 'node count after it', start: c => Math.max(1, (c.size || 0) - 1) },
  { op: 'addservices', label: 'Add services', field: 'services', kind: 'list', help: 'services (comma-separated)' },
  { op: 'removeservices', label: 'Remove services', field: 'services', kind: 'list', help: 'services (comma-separated)' },
  { op: 'configure', label: 'Configure', field: 'config', kind: 'json', help: 'config (a JSON object)' },
  { op: 'upgrade', label: 'Upgrade', field: 'template_version', kind: 'optional', help: 'template version (empty: the current one)' },
  { op: 'start', label: 'Start' },
  { op: 'stop', label: 'Stop' },
  { op: 'restart', label: 'Restart' },
];

function opInput(o, c) {
  if (o.kind === 'count') return h('input', { type: 'number', min: 1, value: o.start ? o.start(c) : 1, id: 'op-input' });
  if (o.kind === 'optional') return h('input', { type: 'number', min: 1, id: 'op-input' });
  if (o.kind === 'json') return h('textarea', { id: 'op-input', rows: 6, cols: 50, spellcheck: 'false' }, '{}');
  if (o.kind === 'list') return h('input', { id: 'op-input', size: 40 });
  return null;
}

// The request body from the dialog's input; throws with a message when it is not valid.
function opBody(o, input) {
  if (!input) return {};
  const v = input.value.trim();
  if (o.kind === 'count') return { [o.field]: Number(v) };
  if (o.kind === 'optional') return v ? { [o.field]: Number(v) } : {};
  if (o.kind === 'list') return { [o.field]: v.split(',').map(x => x.trim()).filter(Boolean) };
  let j;
  try { j = JSON.parse(v || '{}'); } catch (e) { throw new Error(`config: not JSON (${e.message})`); }
  return { [o.field]: j };
}

export async function clustersView(main, args, ctx) {
  if (ctx.who.role === 'superadmin') {
    add(main, h('h1', {}, 'Clusters'),
      h('p', {}, 'A superadmin belongs to no tenant and sees no clusters: sign in as a tenant\'s admin or user.'));
    return;
  }
  const list = await get('/v1/clusters');
  const items = list.items || [];
  add(main, 
    h('h1', {}, 'Clusters'),
    table([
      { title: 'Name', get: c => h('a', { href: `#/clusters/${c.id}`, class: 'cluster-link' }, c.name) },
      { title: 'Status', get: c => badge(c.status) },
      { title: 'Nodes', get: c => c.size ?? '', cls: 'num' },
      { title: 'Template', get: c => `${c.template} v${c.template_version ?? '?'}` },
      { title: 'Services', get: c => (c.services || []).join(', ') },
      { title: 'Owner', get: c => c.owner || '' },
      { title: 'Created', get: c => fmtTime(c.created_at) },
    ], items, `${items.length} cluster${items.length === 1 ? '' : 's'}`),
    await createForm(ctx));
}

async function createForm(ctx) {
  let templates = [];
  try { templates = (await get('/v1/clustertemplates')).items || []; } catch (e) { /* no catalogue */ }
  if (!templates.length) return null;
  const name = h('input', { id: 'new-name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9_.\\-]{0,62}' });
  const tpl = h('select', { id: 'new-template' }, templates.map(t => h('option', { value: t.name }, t.name)));
  const nodes = h('input', { id: 'new-nodes', type: 'number', min: 1, max: 10000, value: 3, required: true });
  const out = h('div', { class: 'preview', 'aria-live': 'polite' });
  const body = () => ({ name: name.value, template: tpl.value, nodes: Number(nodes.value) });
  const create = h('button', { type: 'button', id: 'new-create', disabled: true, onclick: async () => {
    try {
      const r = await post('/v1/clusters', body());
      location.hash = `#/jobs/${r.job.id}`;
    } catch (e) { add(out, h('p', { class: 'error', role: 'alert' }, e.message)); }
  } }, 'Create');
  const form = h('form', { class: 'card', id: 'new-form', onsubmit: async e => {
    e.preventDefault();
    clear(out);
    create.disabled = true;
    try {
      const p = await post('/v1/plans?limit=1', body());
      add(out, h('h3', {}, `Dry run: ${p.tasks} tasks`), diffBlock(previewLines(p)));
      create.disabled = false;
    } catch (e2) { add(out, h('p', { class: 'error', role: 'alert' }, e2.message)); }
  } },
  h('h2', {}, 'New cluster'),
  h('div', { class: 'row' },
    h('label', {}, 'Name ', name), h('label', {}, 'Template ', tpl), h('label', {}, 'Nodes ', nodes)),
  h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Preview'), create),
  out);
  // Create sends what was previewed: any change asks for a new dry run first.
  form.addEventListener('input', () => { create.disabled = true; });
  form.addEventListener('change', () => { create.disabled = true; });
  return form;
}

// A node's addresses: its hostname and every address its provider reported, each once (a
// loopback node's hostname, access and bind addresses are often one and the same).
export function addresses(n) {
  const p = n.properties || {};
  const seen = new Set();
  const put = v => {
    if (v === undefined || v === null || v === '') return;
    if (typeof v === 'object') { Object.values(v).forEach(put); return; }
    seen.add(String(v));
  };
  for (const k of ['hostname', 'ipaddress', 'access_ip', 'bind_ip', 'ipaddresses', 'addresses'])
    put(p[k]);
  return [...seen].join(' ');
}

// The template's links (its "links", macros expanded by droverd against the nodes): a URL
// becomes a link, anything else (a connect string) is shown as text to copy.
function links(c) {
  const ls = (c.links || []).filter(l => l && l.url);
  if (!ls.length) return null;
  return [h('dt', {}, ls.length === 1 ? 'Link' : 'Links'), h('dd', { id: 'cluster-links' }, ls.map((l, i) => [
    i ? ' · ' : '',
    /^https?:\/\/[^%\s]+$/.test(l.url)
      ? h('a', { href: l.url, target: '_blank', rel: 'noopener noreferrer', class: 'ext-link' }, l.label || l.url)
      : h('span', {}, `${l.label ? `${l.label}: ` : ''}`, h('code', {}, l.url)),
  ]))];
}

export async function clusterView(main, [id], ctx) {
  let c;
  try {
    c = await get(`/v1/clusters/${id}`);
  } catch (e) {
    add(main, h('h1', {}, 'Cluster'), h('p', { class: 'error', role: 'alert', id: 'not-found' },
      e.status === 404 ? `cluster ${id} does not exist or is not yours to see` : e.message));
    return;
  }
  const jobs = (await get(`/v1/jobs?cluster=${encodeURIComponent(id)}`)).items || [];
  const snaps = (await get(`/v1/clusters/${encodeURIComponent(id)}/snapshots`)).items || [];
  const open = jobs.find(j => ['pending', 'running', 'paused', 'rolling-back'].includes(j.status));
  const nodes = c.nodes || [];
  add(main, 
    h('p', { class: 'crumbs' }, h('a', { href: '#/clusters' }, 'Clusters'), ' / ', c.name),
    h('h1', {}, c.name, ' ', badge(c.status)),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Template'), h('dd', {}, `${c.template} v${c.template_version ?? '?'}`),
      h('dt', {}, 'Provider'), h('dd', {}, c.provider || ''),
      h('dt', {}, 'Nodes'), h('dd', {}, String(c.size ?? nodes.length)),
      h('dt', {}, 'Services'), h('dd', {}, (c.services || []).join(', ')),
      h('dt', {}, 'Owner'), h('dd', {}, c.owner || '', c.owner_deleted ? ' (deleted)' : ''),
      links(c)),
    operations(c, open, ctx),
    h('h2', {}, 'Nodes'),
    table([
      { title: 'Node', get: n => n.id },
      { title: 'Status', get: n => badge(n.status) },
      { title: 'Hardware', get: n => n.hardwaretype || '' },
      { title: 'Image', get: n => n.imagetype || '' },
      { title: 'Services', get: n => (n.services || []).join(', ') },
      { title: 'Addresses', get: addresses },
    ], nodes.slice(0, 500), nodes.length > 500 ? `first 500 of ${nodes.length} nodes` : null),
    h('h2', {}, 'Jobs'),
    table([
      { title: 'Job', get: j => h('a', { href: `#/jobs/${j.id}`, class: 'job-link' }, `#${j.id}`) },
      { title: 'Operation', get: j => j.operation },
      { title: 'Status', get: j => badge(j.status) },
      { title: 'By', get: j => j.requested_by || '' },
      { title: 'Created', get: j => fmtTime(j.created_at) },
      { title: 'Ended', get: j => fmtTime(j.ended_at) },
      { title: 'Error', get: j => (j.error && (j.error.message || j.error.text || JSON.stringify(j.error))) || '' },
    ], jobs),
    h('h2', {}, 'Snapshots'),
    snaps.length ? h('div', { id: 'snapshots' }, snaps.map(sn => snapshot(id, sn)))
      : h('p', { class: 'help' }, 'No operation of this cluster has succeeded yet.'));
}

// One snapshot: the cluster as a successful job left it; its nodes are read when opened.
function snapshot(id, sn) {
  const body = h('div', {}, h('p', { class: 'help' }, 'loading…'));
  let loaded = false;
  const el = h('details', { class: 'snapshot', ontoggle: async () => {
    if (!el.open || loaded) return;
    loaded = true;
    try {
      const full = await get(`/v1/clusters/${encodeURIComponent(id)}/snapshots/${encodeURIComponent(sn.job)}`);
      const nodes = (full.state && full.state.nodes) || [];
      clear(body);
      add(body, table([
        { title: 'Node', get: n => n.id },
        { title: 'Hardware', get: n => n.hardwaretype || '' },
        { title: 'Image', get: n => n.imagetype || '' },
        { title: 'Services', get: n => (n.services || []).join(', ') },
      ], nodes.slice(0, 500), nodes.length > 500 ? `first 500 of ${nodes.length} nodes` : null));
    } catch (e) {
      loaded = false;
      clear(body);
      add(body, h('p', { class: 'error', role: 'alert' }, e.message));
    }
  } },
  h('summary', {}, `after job #${sn.job} (${sn.operation}), ${fmtTime(sn.taken_at)}: ${sn.nodes} node${sn.nodes === 1 ? '' : 's'}`),
  body);
  return el;
}

// The operation buttons. Admins act on every cluster of the tenant, users on their own;
// a cluster with an unfinished job, or a failed one, takes no operation but delete.
// Each dialog asks the API for the operation's dry run first and shows its diff (plan.js,
// the CLI's lines), then applies exactly that plan: the request carries the dry run's
// revision, and a cluster that changed in between is refused (409, field plan_revision):
// the dialog says so and shows the new plan, to be applied or not. Changing the input
// asks for a new plan before Apply.
function operations(c, open, ctx) {
  const mayAct = ctx.who.role === 'admin' || (ctx.who.role === 'user' && c.owner === ctx.who.user);
  if (!mayAct) return null;
  const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title' });
  const blocked = !!open || ['failed', 'needs-operator', 'deleting'].includes(c.status);
  const ask = o => {
    const { op, label, help } = o;
    clear(dialog);
    const input = opInput(o, c);
    const mode = o.kind === 'json' ? h('select', { id: 'op-mode' },
      h('option', { value: 'merge' }, 'merge over the current config'),
      h('option', { value: 'replace' }, 'replace (over the template\'s defaults)')) : null;
    const err = h('p', { class: 'error', role: 'alert', id: 'op-error' });
    const note = h('p', { class: 'help', id: 'op-note', 'aria-live': 'polite' });
    const out = h('div', { class: 'preview', id: 'op-plan', 'aria-live': 'polite' });
    const path = `/v1/clusters/${encodeURIComponent(c.id)}/${op}`;
    let planned = null; // {body, revision} of the plan shown
    const apply = h('button', { id: 'op-apply', disabled: true, class: op === 'delete' ? 'danger' : null, onclick: async () => {
      if (!planned) return;
      apply.disabled = true;
      err.textContent = '';
      try {
        const r = await post(path, { ...planned.body, plan_revision: planned.revision });
        dialog.close();
        location.hash = `#/jobs/${r.job.id}`;
      } catch (e) {
        if (e.status === 409 && e.field === 'plan_revision') {
          await plan('The cluster changed since this plan was made, so nothing was applied. ' +
            'This is the plan for the cluster as it is now: apply it, or cancel.');
          dialog.dataset.conflicts = String(Number(dialog.dataset.conflicts || 0) + 1);
        } else {
          err.textContent = e.message;
          apply.disabled = false;
        }
      }
    } }, label);
    // The dry run of what the dialog says now; Apply then sends that body and its revision.
    async function plan(why) {
      planned = null;
      apply.disabled = true;
      err.textContent = '';
      note.textContent = why || '';
      note.classList.toggle('warn', !!why);
      clear(out);
      let body;
      try {
        body = opBody(o, input);
        if (mode) body.mode = mode.value;
      } catch (e) { err.textContent = e.message; return; }
      add(out, h('p', { class: 'help' }, 'planning…'));
      try {
        const p = await post(path, { ...body, dry_run: true });
        planned = { body, revision: p.revision };
        fill(out, diffBlock(diffLines(p)));
        out.dataset.revision = p.revision;
        apply.disabled = false;
      } catch (e) {
        clear(out);
        err.textContent = e.message;
      }
    }
    const replan = () => { planned = null; apply.disabled = true; clear(out); note.classList.remove('warn'); note.textContent = 'the input changed: show the plan again'; };
    if (input) input.addEventListener('input', replan);
    if (mode) mode.addEventListener('change', replan);
    add(dialog,
      h('h2', { id: 'confirm-title' }, `${label} cluster ${c.name}?`),
      input ? h('div', { class: 'row' }, h('label', {}, `${help} `, input), mode ? h('label', {}, 'mode ', mode) : null) : null,
      note, out, err,
      h('div', { class: 'row' },
        input ? h('button', { class: 'secondary', id: 'op-plan-button', onclick: () => plan() }, 'Show plan') : null,
        apply,
        h('button', { class: 'secondary', onclick: () => dialog.close() }, 'Cancel')));
    dialog.showModal();
    if (!input) plan();
  };
  return h('section', { class: 'ops', 'aria-label': 'Operations' },
    open ? h('p', {}, 'Job ', h('a', { href: `#/jobs/${open.id}` }, `#${open.id}`), ` (${open.operation}) is ${open.status}: operations wait for it.`) : null,
    OPS.map(o => h('button', { disabled: blocked, onclick: () => ask(o) }, o.label)),
    h('button', { class: 'danger', disabled: !!open, onclick: () => ask({ op: 'delete', label: 'Delete' }) }, 'Delete'),
    dialog);
}
