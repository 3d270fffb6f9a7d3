// cdp: a small Chrome DevTools Protocol client for the dashboard's browser test. Chromium
// is started by us with --remote-debugging-pipe: requests go to its fd 3 and replies come
// from its fd 4 as NUL-terminated JSON, so no port is opened and no library is needed.
// The browser is stopped by its pid (its own process group), never by name.
import { spawn } from 'node:child_process';

export async function launch({ bin = '/usr/bin/chromium', userDataDir, width = 1280, height = 800, log }) {
  const args = [
    '--headless=new', '--remote-debugging-pipe', '--no-first-run', '--no-default-browser-check',
    '--disable-gpu', '--disable-extensions', '--disable-background-networking', '--disable-sync',
    '--disable-component-update', '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio',
    `--user-data-dir=${userDataDir}`, `--window-size=${width},${height}`,
  ];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  args.push('about:blank');
  const child = spawn(bin, args, { stdio: ['ignore', log, log, 'pipe', 'pipe'], detached: true });
  const out = child.stdio[3], inp = child.stdio[4];
  let buf = Buffer.alloc(0), next = 1;
  const waiting = new Map(), listeners = [];
  inp.on('data', chunk => {
    buf = Buffer.concat([buf, chunk]);
    let z;
    while ((z = buf.indexOf(0)) >= 0) {
      const msg = JSON.parse(buf.subarray(0, z).toString('utf8'));
      buf = buf.subarray(z + 1);
      if (msg.id && waiting.has(msg.id)) {
        const { resolve, reject, method } = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
        else resolve(msg.result);
      } else if (msg.method) {
        for (const l of listeners) l(msg);
      }
    }
  });
  const exited = new Promise(r => child.on('exit', r));
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject, method });
    out.write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  });
  const browser = {
    pid: child.pid,
    send,
    on: fn => listeners.push(fn),
    async close() {
      try { await Promise.race([send('Browser.close'), new Promise(r => setTimeout(r, 3000))]); } catch (e) { /* gone */ }
      const t = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, 5000);
      await exited;
      clearTimeout(t);
    },
    async newPage() {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      const page = {
        sessionId,
        send: (m, p) => send(m, p, sessionId),
        on: (method, fn) => listeners.push(msg => { if (msg.sessionId === sessionId && msg.method === method) fn(msg.params); }),
        async eval(expr) {
          const r = await page.send('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
          if (r.exceptionDetails) throw new Error(`eval ${expr}: ${r.exceptionDetails.exception ? r.exceptionDetails.exception.description : r.exceptionDetails.text}`);
          return r.result.value;
        },
        // Wait until expr is truthy; returns its value.
        async until(expr, what, ms = 20000) {
          const end = Date.now() + ms;
          let last;
          for (;;) {
            try { last = await page.eval(expr); } catch (e) { last = undefined; }
            if (last) return last;
            if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what || expr}`);
            await new Promise(r => setTimeout(r, 150));
          }
        },
      };
      return page;
    },
  };
  return browser;
}
