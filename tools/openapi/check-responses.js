// check-responses.js DOC LOG: validate the answers an API test got against the OpenAPI
// document (integration/api/api_lib.sh records them: one JSON line each,
// {"method", "path", "status", "type", "body"}, body the file holding it). For each: the path
// must match a documented path (literal segments before templated ones), the method an
// operation of it, the status one of its responses (else its "default"), and a JSON body
// the response's schema (ajv, JSON Schema 2020-12, as OpenAPI 3.1 uses). Prints one line per
// answer that does not fit and exits 1, else one summary line.
'use strict';
const fs = require('fs');
const yaml = require('js-yaml');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats');

const [docPath, logPath] = process.argv.slice(2);
const doc = yaml.load(fs.readFileSync(docPath, 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi.json');

// Documented paths as segment lists, literal segments preferred to templates.
const paths = Object.keys(doc.paths).map((p) => ({ p, segs: p.split('/').filter(Boolean) }));
function matchPath(path) {
  const segs = path.split('?')[0].split('/').filter(Boolean);
  let best = null, bestScore = -1;
  for (const d of paths) {
    if (d.segs.length !== segs.length) continue;
    let score = 0, ok = true;
    d.segs.forEach((s, i) => {
      if (s.startsWith('{')) return;
      if (s === decodeURIComponent(segs[i])) score++;
      else ok = false;
    });
    if (ok && score > bestScore) { best = d.p; bestScore = score; }
  }
  return best;
}
const resolve = (o) => {
  while (o && o.$ref) o = o.$ref.replace(/^#\//, '').split('/').reduce((a, k) => a[k], doc);
  return o;
};

const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const validators = new Map();
// validatorAt(pointer): the compiled schema at that JSON pointer of the document.
function validatorAt(ptr) {
  let v = validators.get(ptr);
  if (!v) {
    v = ajv.compile({ $ref: 'openapi.json#' + ptr });
    validators.set(ptr, v);
  }
  return v;
}
const errorPtr = '/components/schemas/Error';
let n = 0;
const bad = [];
for (const line of fs.readFileSync(logPath, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const r = JSON.parse(line);
  n++;
  const what = `${r.method} ${r.path} -> ${r.status}`;
  const type = (r.type || '').split(';')[0].trim();
  const readJson = () => {
    const body = fs.readFileSync(r.body, 'utf8');
    try { return [JSON.parse(body), body]; } catch (e) { return [undefined, body]; }
  };
  const p = matchPath(r.path);
  const method = r.method === 'HEAD' ? 'get' : r.method.toLowerCase();
  const op = p && doc.paths[p][method];
  if (!op) {
    // A path or method the API does not have: the router's own 404, 405 or 501, an Error.
    if (![404, 405, 501].includes(r.status)) {
      bad.push(`${what}: ${p ? `${p} documents no ${r.method}` : 'no documented path'}`);
      continue;
    }
    if (r.method === 'HEAD') continue;
    const [json, body] = readJson();
    const v = validatorAt(errorPtr);
    if (!v(json)) bad.push(`${what}: not an Error: ${body.slice(0, 160)}`);
    continue;
  }
  const key = String(r.status) in op.responses ? String(r.status) : 'default';
  let resp = op.responses[key];
  if (!resp) { bad.push(`${what}: ${p} ${method} documents no ${r.status} and no default`); continue; }
  let ptr = `/paths/${esc(p)}/${method}/responses/${key}`;
  if (resp.$ref) { ptr = resp.$ref.slice(1); resp = resolve(resp); }
  if (r.method === 'HEAD' || r.status === 204 || r.status === 304) continue;
  const content = resp.content || {};
  if (!content[type]) {
    if (Object.keys(content).length) bad.push(`${what}: content type "${type}" not documented (${Object.keys(content)})`);
    continue;
  }
  if (type !== 'application/json' || !content[type].schema) continue;
  const [json, body] = readJson();
  if (json === undefined) { bad.push(`${what}: body is not JSON: ${body.slice(0, 80)}`); continue; }
  const v = validatorAt(`${ptr}/content/application~1json/schema`);
  if (!v(json)) bad.push(`${what}: ${ajv.errorsText(v.errors)} in ${body.slice(0, 160)}`);
}
for (const b of bad) console.error(`FAIL: openapi: ${b}`);
if (bad.length) process.exit(1);
console.log(`ok: openapi: ${n} answers of this test fit docs/openapi.yaml`);
