// audit: the audit log (GET /v1/audit, newest first) with filters. The API takes a limit
// (and, for a superadmin, a tenant); actor, action, kind and text filter what came back.
import { h, clear, add, fill, table, fmtTime } from './dom.js';
import { get } from './api.js';

export async function auditView(main, args, ctx) {
  const limit = h('select', { id: 'audit-limit' }, [100, 500, 1000].map(n => h('option', { value: n }, String(n))));
  const tenant = ctx.who.role === 'superadmin' ? h('input', { id: 'audit-tenant', placeholder: 'tenant (all)' }) : null;
  const f = { actor: h('select', { id: 'audit-actor' }), action: h('select', { id: 'audit-action' }),
    kind: h('select', { id: 'audit-kind' }), text: h('input', { type: 'search', id: 'audit-text', placeholder: 'search' }) };
  const out = h('div', {});
  let items = [];
  const opts = (sel, vals) => {
    const cur = sel.value;
    fill(sel, h('option', { value: '' }, 'any'), ...[...new Set(vals)].sort().map(v => h('option', { value: v }, v)));
    sel.value = vals.includes(cur) ? cur : '';
  };
  const render = () => {
    const q = f.text.value.toLowerCase();
    const rows = items.filter(e => (!f.actor.value || e.actor === f.actor.value) &&
      (!f.action.value || e.action === f.action.value) && (!f.kind.value || e.entity_kind === f.kind.value) &&
      (!q || JSON.stringify(e).toLowerCase().includes(q)));
    fill(out, table([
      { title: 'When', get: e => fmtTime(e.at) },
      { title: 'Actor', get: e => e.actor || '' },
      { title: 'Action', get: e => e.action },
      { title: 'Entity', get: e => entity(e) },
      { title: 'Source', get: e => e.source || '' },
      { title: 'Detail', get: e => (e.detail ? h('code', {}, JSON.stringify(e.detail)) : '') },
    ], rows, `${rows.length} of ${items.length} entries`));
  };
  const load = async () => {
    let p = `/v1/audit?limit=${limit.value}`;
    if (tenant && tenant.value.trim()) p += `&tenant=${encodeURIComponent(tenant.value.trim())}`;
    try {
      items = (await get(p)).items || [];
    } catch (e) {
      fill(out, h('p', { class: 'error', role: 'alert' }, e.message));
      return;
    }
    opts(f.actor, items.map(e => e.actor || ''));
    opts(f.action, items.map(e => e.action));
    opts(f.kind, items.map(e => e.entity_kind || ''));
    render();
  };
  if (ctx.who.role === 'user') {
    add(main, h('h1', {}, 'Audit log'), h('p', {}, 'The audit log is for admins.'));
    return;
  }
  limit.addEventListener('change', load);
  if (tenant) tenant.addEventListener('change', load);
  for (const el of Object.values(f)) el.addEventListener(el.tagName === 'INPUT' ? 'input' : 'change', render);
  add(main, h('h1', {}, 'Audit log'),
    h('form', { class: 'row filters', onsubmit: e => { e.preventDefault(); load(); } },
      h('label', {}, 'Last ', limit), tenant ? h('label', {}, 'Tenant ', tenant) : null,
      h('label', {}, 'Actor ', f.actor), h('label', {}, 'Action ', f.action),
      h('label', {}, 'Kind ', f.kind), h('label', {}, 'Text ', f.text),
      h('button', { type: 'submit' }, 'Reload')),
    out);
  await load();
}

function entity(e) {
  if (!e.entity_kind) return '';
  const t = `${e.entity_kind} ${e.entity_id || ''}`;
  if (e.entity_kind === 'cluster' && e.entity_id) return h('a', { href: `#/clusters/${e.entity_id}` }, t);
  if (e.entity_kind === 'job' && e.entity_id) return h('a', { href: `#/jobs/${e.entity_id}` }, t);
  return t;
}
