// plan: a dry run shown as the diff the CLI prints (src/bin/cli_plan.c, docs/api.md
// "Plans"), line for line: + added, - removed, ~ changed, then the plan's summary and what
// its rollback would do. Used by the operation dialogs and the new-cluster form
// (clusters.js), which apply exactly the plan shown. No state; text only, never markup.
import { h } from './dom.js';

const names = a => (a || []).join(', ');
const counts = o => Object.entries(o || {}).map(([k, v]) => `${k} ${v}`).join(', ');
const value = v => (v === undefined ? '(none)' : JSON.stringify(v));

// The summary line of a plan ({tasks, by_action, stages, critical_path, estimated_seconds,
// estimate}); for a create's preview, its nodes and no estimate (as the CLI prints it).
function planLine(p, nodes) {
  let l = `plan: ${nodes !== undefined ? `${nodes} nodes, ` : ''}${p.tasks} tasks (${counts(p.by_action)}), ${p.stages} stages, critical path ${p.critical_path} tasks`;
  if (nodes !== undefined) return l;
  if (typeof p.estimated_seconds === 'number') {
    const k = p.estimate || {};
    l += `, about ${Math.round(p.estimated_seconds)} s (${k.known} of ${(k.known || 0) + (k.unknown || 0)} kinds of task timed before)`;
  } else if ('estimated_seconds' in p) {
    l += ', no estimate (no task of these kinds timed before)';
  }
  return l;
}

// The lines of a dry run's answer: [sign, text], sign one of + - ~ or '' (summary).
export function diffLines(plan) {
  const L = [];
  const c = plan.cluster || {}, d = plan.diff || {};
  L.push(['', `cluster ${c.id} (${c.name}): ${plan.operation}, revision ${plan.revision}`]);
  if (d.size && d.size.old !== d.size.new) L.push(['~', `size ${d.size.old} -> ${d.size.new}`]);
  if (d.template_version)
    L.push(['~', `template ${c.template} version ${d.template_version.old} -> ${d.template_version.new}`]);
  const n = d.nodes || {};
  for (const e of n.added || []) L.push(['+', `node ${e.id}  ${e.hardwaretype}/${e.imagetype}  ${names(e.services)}`]);
  for (const e of n.removed || []) L.push(['-', `node ${e.id}  ${names(e.services)}`]);
  for (const e of n.changed || []) {
    if ((e.services_added || []).length) L.push(['~', `node ${e.id}  + ${names(e.services_added)}`]);
    if ((e.services_removed || []).length) L.push(['~', `node ${e.id}  - ${names(e.services_removed)}`]);
  }
  const sv = d.services || {};
  if ((sv.added || []).length) L.push(['+', `services ${names(sv.added)}`]);
  if ((sv.removed || []).length) L.push(['-', `services ${names(sv.removed)}`]);
  for (const e of d.reconfigure || [])
    L.push(['~', `service ${e.service} reconfigured${e.restart ? ' and restarted' : ''} (reads ${names(e.on)})`]);
  for (const e of d.config || []) {
    const has = k => Object.prototype.hasOwnProperty.call(e, k);
    if (!has('old')) L.push(['+', `config ${e.key}: ${value(e.new)}`]);
    else if (!has('new')) L.push(['-', `config ${e.key}: ${value(e.old)}`]);
    else L.push(['~', `config ${e.key}: ${value(e.old)} -> ${value(e.new)}`]);
  }
  L.push(['', planLine(plan.plan || {})]);
  const rb = plan.rollback || {};
  if (rb.error) L.push(['', `rollback: none (${rb.error})`]);
  else if (!rb.tasks) L.push(['', 'rollback if it fails at its end: nothing to undo']);
  else L.push(['', `rollback if it fails at its end: ${rb.tasks} tasks (${counts(rb.by_action)})`]);
  return L;
}

// The lines of a create's preview (POST /v1/plans): a + line a node, named as the planner
// names a create's nodes (layout order), then the summary.
export function previewLines(p) {
  const L = [];
  let k = 0;
  for (const e of (p.layout && p.layout.nodes) || [])
    for (let i = 0; i < (Number.isInteger(e.count) ? e.count : 1); i++)
      L.push(['+', `node node-${++k}  ${e.hardwaretype}/${e.imagetype}  ${names(e.services)}`]);
  L.push(['', planLine(p.summary || { tasks: p.tasks }, k)]);
  return L;
}

const CLS = { '+': 'add', '-': 'del', '~': 'chg', '': 'sum' };

// A <pre> of diff lines, each its own element with the sign first (colour is never the
// only cue), at most max lines shown (a create of 10,000 nodes), the rest counted.
export function diffBlock(lines, max = 200) {
  const out = [];
  let n = 0, dropped = 0;
  for (const l of lines) {
    if (l[0] && ++n > max) { dropped++; continue; }
    if (dropped && !l[0]) { out.push(['', `... and ${dropped} more lines`]); dropped = 0; }
    out.push(l);
  }
  if (dropped) out.push(['', `... and ${dropped} more lines`]);
  return h('pre', { class: 'plan-diff', 'aria-label': 'plan' },
    out.map(([sign, text]) => h('span', { class: `dl ${CLS[sign]}` }, sign ? `${sign} ${text}` : text, '\n')));
}
