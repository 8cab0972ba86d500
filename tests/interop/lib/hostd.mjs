// Starts and stops sluice-hostd and talks to its admin endpoint.
//
// The binary comes from $SLUICE_HOSTD (CI points it at the ASan+UBSan
// build), else <repo>/build/src/sluice-hostd.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '../../..');
export const HOSTD = process.env.SLUICE_HOSTD
  ? path.resolve(process.env.SLUICE_HOSTD)
  : path.join(REPO, 'build/src/sluice-hostd');

const START_TIMEOUT_MS = 15000;
// Generous: under ASan the leak check at exit takes a while.
const STOP_TIMEOUT_MS = 10000;
const BANNER =
  /^sluice-hostd: streaming on http:\/\/127\.0\.0\.1:(\d+)\/ admin on http:\/\/127\.0\.0\.1:(\d+)\/$/;
// What sanitizers print; any of it fails the stop check even with exit 0
// (UBSan without halt_on_error keeps going).
const SANITIZER_MARKS = [
  'ERROR: AddressSanitizer',
  'ERROR: LeakSanitizer',
  'runtime error:',
  'ERROR: UndefinedBehaviorSanitizer',
];

export class Hostd {
  constructor(proc, port, adminPort) {
    this.proc = proc;
    this.port = port;
    this.adminPort = adminPort;
    this.stderr = '';
    this.exited = null; // {code, signal} once the process is gone
    proc.stderr.on('data', (d) => {
      this.stderr += d;
    });
    this.exitPromise = new Promise((resolve) => {
      proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      });
    });
  }

  describe() {
    return `sluice-hostd (${HOSTD}) ${this.exited ? JSON.stringify(this.exited) : 'running'}` +
      `\n--- stderr ---\n${this.stderr}--- end ---`;
  }

  // Fails when the server is no longer running (e.g. it crashed mid-test).
  assertAlive() {
    if (this.exited)
      throw new Error(`the server died: ${this.describe()}`);
  }

  // SIGTERM, then the exit must be a clean 0 with no sanitizer report.
  async stop() {
    if (!this.exited)
      this.proc.kill('SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), STOP_TIMEOUT_MS);
    });
    const res = await Promise.race([this.exitPromise, timeout]);
    clearTimeout(timer);
    if (!res) {
      this.proc.kill('SIGKILL');
      await this.exitPromise;
      throw new Error(`no exit within ${STOP_TIMEOUT_MS} ms of SIGTERM: ${this.describe()}`);
    }
    // Let the stderr pipe drain so a sanitizer report is complete.
    await new Promise((resolve) => {
      if (this.proc.stderr.readableEnded) resolve();
      else this.proc.stderr.once('end', resolve);
    });
    if (res.code !== 0 || res.signal !== null)
      throw new Error(`unclean exit after SIGTERM: ${this.describe()}`);
    const mark = SANITIZER_MARKS.find((m) => this.stderr.includes(m));
    if (mark)
      throw new Error(`sanitizer report ("${mark}"): ${this.describe()}`);
  }

  // GET on the admin port; resolves {status, body (parsed JSON), headers}.
  admin(pathAndQuery) {
    this.assertAlive();
    return new Promise((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: this.adminPort, path: pathAndQuery, agent: false },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () => {
            let body;
            try {
              body = JSON.parse(text);
            } catch {
              reject(new Error(`admin ${pathAndQuery}: not JSON: ${JSON.stringify(text)}`));
              return;
            }
            resolve({ status: res.statusCode, body, headers: res.headers });
          });
        },
      );
      req.on('error', reject);
    });
  }

  async stats() {
    const r = await this.admin('/stats');
    if (r.status !== 200)
      throw new Error(`/stats answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  // Polls /stats until pred(stats) holds; returns the last stats.
  async waitStats(pred, timeoutMs = 5000, what = 'condition') {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
      last = await this.stats();
      if (pred(last))
        return last;
      if (Date.now() > deadline)
        throw new Error(`/stats never met ${what} in ${timeoutMs} ms; last ${JSON.stringify(last)}`);
      await sleep(50);
    }
  }

  // The admin's Exec: returns the raw admin answer {status, body}.
  execRaw(opts) {
    return this.admin(`/exec?${execQuery(opts)}`);
  }

  // Like execRaw, but wants a 200 and returns the ws:// URL.
  async execUrl(opts) {
    const r = await this.execRaw(opts);
    if (r.status !== 200)
      throw new Error(`admin /exec answered ${r.status}: ${JSON.stringify(r.body)}`);
    return toWs(r.body.url);
  }

  async attachUrl(opts) {
    const q = streamFlags(opts);
    q.unshift(`container=${encodeURIComponent(opts.container)}`);
    const r = await this.admin(`/attach?${q.join('&')}`);
    if (r.status !== 200)
      throw new Error(`admin /attach answered ${r.status}: ${JSON.stringify(r.body)}`);
    return toWs(r.body.url);
  }
}

function streamFlags(o) {
  const q = [];
  for (const k of ['tty', 'stdin', 'stdout', 'stderr'])
    if (o[k]) q.push(`${k}=1`);
  return q;
}

// opts: {cmd: [argv...], tty, stdin, stdout, stderr}
export function execQuery(opts) {
  const q = (opts.cmd || []).map((a) => `cmd=${encodeURIComponent(a)}`);
  return q.concat(streamFlags(opts)).join('&');
}

export function toWs(url) {
  if (!/^http:\/\//.test(url))
    throw new Error(`unexpected streaming URL ${url}`);
  return url.replace(/^http:/, 'ws:');
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Spawns sluice-hostd with --port 0 --admin-port 0 plus args and waits for
// its banner line.
export async function startHostd(args = []) {
  if (!existsSync(HOSTD))
    throw new Error(`no sluice-hostd at ${HOSTD} (build it, or set SLUICE_HOSTD)`);
  const proc = spawn(HOSTD, ['--port', '0', '--admin-port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const h = new Hostd(proc, 0, 0);
  const line = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`no banner in ${START_TIMEOUT_MS} ms: ${h.describe()}`)),
      START_TIMEOUT_MS,
    );
    const onData = (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      proc.stdout.off('data', onData);
      proc.stdout.resume(); // keep draining anything later
      resolve(out.slice(0, nl));
    };
    proc.stdout.on('data', onData);
    proc.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    h.exitPromise.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before its banner: ${h.describe()}`));
    });
  });
  const m = BANNER.exec(line);
  if (!m) {
    proc.kill('SIGKILL');
    throw new Error(`unexpected banner ${JSON.stringify(line)}`);
  }
  h.port = Number(m[1]);
  h.adminPort = Number(m[2]);
  return h;
}
