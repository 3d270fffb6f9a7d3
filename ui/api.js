// api: the dashboard's only way to the server: the same /v1 API and bearer token as the
// drover CLI. The token lives in sessionStorage (this tab only, gone when it closes).
const KEY = 'drover.token';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: t => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

let onUnauthorized = () => {};
export function setUnauthorized(fn) { onUnauthorized = fn; }

export async function api(method, path, body, signal) {
  const headers = { Authorization: `Bearer ${token.get() || ''}` };
  const init = { method, headers, cache: 'no-store', signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'unreachable', 'droverd is unreachable');
  }
  if (res.status === 204) return null;
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code || 'error', e.message || `HTTP ${res.status}`, e.field);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  return data;
}

export const get = (p, signal) => api('GET', p, undefined, signal);
export const post = (p, b) => api('POST', p, b === undefined ? {} : b);
export const del = p => api('DELETE', p);

// Does a route exist on this droverd? A GET of a POST-only route answers 405, an unknown
// path 404: a probe that changes nothing (used for APIs that other branches are adding).
export async function routeExists(path) {
  try {
    const res = await fetch(path, { method: 'GET', headers: { Authorization: `Bearer ${token.get() || ''}` } });
    await res.text();
    return res.status !== 404;
  } catch (e) {
    return false;
  }
}
