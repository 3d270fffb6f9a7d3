// app: sign-in, the header, and the hash router (#/clusters, #/clusters/ID, #/jobs/ID,
// #/fleet, #/audit). Each view is a function (el, args, ctx) that fills el and may return
// a stop function, called when the view is left (it ends its polling).
//
// Renders race: a view awaits the API, and the route may change meanwhile (a hashchange
// while a view loads, the sign-in's own navigation). So every render gets its own container,
// the only child of main while the render is current; a newer route replaces it, and a
// stale render's later writes go to a detached element that is never shown. ctx.gen counts
// renders; ctx.current(gen) tells a view whether its render is still the one on screen.
import { h, clear, add, fill } from './dom.js';
import { get, token, setUnauthorized } from './api.js';
import { clustersView, clusterView } from './clusters.js';
import { jobView } from './job.js';
import { fleetView } from './fleet.js';
import { auditView } from './audit.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const whoEl = document.getElementById('who');
const ctx = { who: null, notice: '', gen: 0, current: g => g === ctx.gen };
let stop = null;
const renders = { started: 0, settled: 0 };

const routes = [
  [/^#\/clusters\/([0-9]+)$/, clusterView, 'clusters'],
  [/^#\/clusters$/, clustersView, 'clusters'],
  [/^#\/jobs\/([0-9]+)$/, jobView, 'clusters'],
  [/^#\/fleet$/, fleetView, 'fleet'],
  [/^#\/audit$/, auditView, 'audit'],
];

function signinView(el) {
  const input = h('input', {
    id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'drv_…', 'aria-describedby': 'token-help',
  });
  const msg = h('p', { class: 'error', role: 'alert' }, ctx.notice);
  ctx.notice = '';
  const form = h('form', { class: 'card signin', onsubmit: async e => {
    e.preventDefault();
    token.set(input.value.trim());
    try {
      await signedIn();
      // One render: a hash change routes by itself, the same hash does not.
      const to = wanted() || '#/clusters';
      if (location.hash === to) route();
      else location.hash = to;
    } catch (err) {
      token.clear();
      msg.textContent = `sign-in failed: ${err.message}`;
    }
  } },
  h('h1', {}, 'Sign in'),
  h('label', { for: 'token' }, 'API token'),
  input,
  h('p', { id: 'token-help', class: 'help' },
    'A token from "drover token create" or "drover user create". It is kept in this tab\'s ' +
    'session storage only and sent as a bearer token to this droverd\'s /v1 API.'),
  h('button', { type: 'submit', id: 'signin' }, 'Sign in'),
  msg);
  add(el, form);
  input.focus();
}

async function signedIn() {
  ctx.who = await get('/v1/whoami');
  fill(whoEl, 
    h('span', { id: 'who-user' }, ctx.who.user),
    h('span', { class: 'sep' }, ' · '),
    h('span', { id: 'who-tenant' }, ctx.who.tenant || 'no tenant'),
    h('span', { class: 'sep' }, ' · '),
    h('span', { id: 'who-role', class: 'role' }, ctx.who.role),
    h('button', { class: 'link', id: 'signout', onclick: signOut }, 'Sign out'));
  nav.hidden = false;
  for (const a of nav.querySelectorAll('a')) {
    const adminOnly = a.dataset.view === 'fleet' || a.dataset.view === 'audit';
    a.hidden = adminOnly && ctx.who.role === 'user';
  }
}

function signOut() {
  token.clear();
  ctx.who = null;
  clear(whoEl);
  nav.hidden = true;
  location.hash = '#/signin';
  route();
}

setUnauthorized(() => {
  if (!ctx.who) return;
  ctx.notice = 'your token is no longer accepted: sign in again';
  token.clear();
  ctx.who = null;
  clear(whoEl);
  nav.hidden = true;
  location.hash = '#/signin';
});

// The hash a signed-out visitor asked for (kept through the sign-in), or ''.
function wanted() {
  const hsh = location.hash;
  return routes.some(([re]) => re.test(hsh)) ? hsh : '';
}

async function route() {
  if (stop) { stop(); stop = null; }
  const gen = ++ctx.gen;
  const el = h('div', { class: 'view', 'data-gen': String(gen) });
  fill(main, el);
  main.dataset.started = String(++renders.started);
  try {
    await render(el, gen);
  } finally {
    // Every render ends here, the current one and stale ones alike (the browser test waits
    // until all have, then checks that only the current one shows).
    main.dataset.settled = String(++renders.settled);
    if (gen === ctx.gen) el.dataset.done = '1';
  }
}

async function render(el, gen) {
  if (!token.get()) {
    signinView(el);
    return;
  }
  if (!ctx.who) {
    try {
      await signedIn();
    } catch (err) {
      token.clear();
      ctx.notice = `sign-in failed: ${err.message}`;
      if (gen === ctx.gen) signinView(el);
      return;
    }
    if (gen !== ctx.gen) return; // another route took over while we signed in
  }
  let hash = location.hash;
  if (!hash || hash === '#/signin' || hash === '#/' || hash === '#')
    hash = ctx.who.role === 'superadmin' ? '#/audit' : '#/clusters';
  if (hash !== location.hash) history.replaceState(null, '', hash);
  for (const [re, view, tab] of routes) {
    const m = re.exec(hash);
    if (!m) continue;
    for (const a of nav.querySelectorAll('a'))
      a.setAttribute('aria-current', a.dataset.view === tab ? 'page' : 'false');
    main.dataset.view = tab;
    try {
      const s = (await view(el, m.slice(1), ctx, gen)) || null;
      if (gen === ctx.gen) stop = s;
      else if (s) s(); // left while it loaded
    } catch (err) {
      if (gen === ctx.gen) add(el, h('p', { class: 'error', role: 'alert' }, err.message));
    }
    return;
  }
  add(el, h('p', { class: 'error' }, `no such view: ${hash}`));
}

window.addEventListener('hashchange', route);
route();
