// Starts sluice-kube (the Kubernetes API front) in front of a CRI endpoint
// for the interop tests, writes the kubeconfig its --print-kubeconfig gives,
// and runs the stock kubectl against it.
//
//   const kf = await KubeFront.start({ endpoint, token: 't0k', tls: true });
//   const r = await kf.kubectl(['get', 'pods', '-A']);   // {code, stdout, stderr}
//   await kf.stop();   // SIGTERM: exit 0, no sanitizer report
//
// The binary comes from $SLUICE_KUBE, else <repo>/build/src/sluice-kube/sluice-kube.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './hostd.mjs';

export const SLUICE_KUBE = process.env.SLUICE_KUBE
  ? path.resolve(process.env.SLUICE_KUBE)
  : path.join(REPO, 'build/src/sluice-kube/sluice-kube');
export const KUBECTL = process.env.KUBECTL || 'kubectl';

const START_TIMEOUT_MS = 15000;
const STOP_TIMEOUT_MS = 15000;
const BANNER = /^sluice-kube: serving (https?:\/\/\S+) for (\S+) on (\S+)$/m;
const SANITIZER_MARKS = ['ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:'];

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Why kubectl tests cannot run (for skip), or false.
export function kubeSkipReason() {
  if (!fs.existsSync(SLUICE_KUBE)) return `no sluice-kube at ${SLUICE_KUBE} (build it, or set SLUICE_KUBE)`;
  if (spawnSync(KUBECTL, ['version', '--client'], { stdio: 'ignore' }).status !== 0)
    return 'kubectl is not installed';
  return false;
}

// The two transports of kubectl 1.32: WebSocket first (default), or SPDY
// only (the env switches of protocol notes §9.1).
export const TRANSPORTS = {
  websocket: {},
  spdy: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' },
};

export class KubeFront {
  constructor(opts) {
    this.opts = opts;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sk-'));
    this.cert = path.join(this.dir, 'serving.crt');
    this.kubeconfig = path.join(this.dir, 'kubeconfig');
    this.cacheDir = path.join(this.dir, 'cache');
    this.stdout = '';
    this.stderr = '';
    this.exited = null;
  }

  // opts: token (on the command line, or in $SLUICE_KUBE_TOKEN with
  // tokenEnv), tokenFile, tls, certDir (else --cert in the temp dir),
  // tlsFiles {cert, key}, address, port.
  flags(port) {
    const f = ['--address', this.opts.address || '127.0.0.1', '--port', String(port)];
    if (this.opts.tlsFiles) {
      f.push('--tls-cert-file', this.opts.tlsFiles.cert, '--tls-private-key-file', this.opts.tlsFiles.key);
    } else if (this.opts.certDir) {
      f.push('--cert-dir', this.opts.certDir);
    } else {
      f.push('--cert', this.cert);
    }
    if (this.opts.tokenFile) f.push('--token-file', this.opts.tokenFile);
    else if (this.opts.token && !this.opts.tokenEnv) f.push('--token', this.opts.token);
    if (this.opts.tls) f.push('--tls');
    return f;
  }

  certPath() {
    if (this.opts.tlsFiles) return this.opts.tlsFiles.cert;
    return this.opts.certDir ? path.join(this.opts.certDir, 'serving.crt') : this.cert;
  }

  tokenEnv() {
    return this.opts.tokenEnv ? { SLUICE_KUBE_TOKEN: this.opts.token } : {};
  }

  static async start(opts) {
    const kf = new KubeFront(opts);
    await kf.launch();
    return kf;
  }

  async launch() {
    const args = [...this.flags(this.opts.port ?? 0), '--runtime-endpoint', this.opts.endpoint,
      '--node-name', 'sluice-node', ...(this.opts.args || [])];
    // opts.asanOptions: e.g. a small quarantine where a test measures RSS
    const asan = [process.env.ASAN_OPTIONS, this.opts.asanOptions].filter(Boolean).join(':');
    const env = { ...process.env, ...this.tokenEnv(), ...(asan ? { ASAN_OPTIONS: asan } : {}) };
    this.proc = spawn(SLUICE_KUBE, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.proc.stdout.on('data', (d) => { this.stdout += d; });
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      });
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!BANNER.test(this.stdout)) {
      if (this.exited) throw new Error(`sluice-kube exited at start: ${this.describe()}`);
      if (Date.now() > deadline) throw new Error(`sluice-kube: no banner: ${this.describe()}`);
      await sleep(20);
    }
    const m = BANNER.exec(this.stdout);
    this.url = m[1];
    this.runtime = m[2];
    this.port = Number(new URL(this.url).port);
    const r = spawnSync(SLUICE_KUBE, [...this.flags(this.port), '--print-kubeconfig'],
      { encoding: 'utf8', env: { ...process.env, ...this.tokenEnv() } });
    if (r.status !== 0) throw new Error(`--print-kubeconfig: ${r.stderr}`);
    this.kubeconfigText = r.stdout;
    fs.writeFileSync(this.kubeconfig, r.stdout);
  }

  describe() {
    return `sluice-kube ${this.exited ? JSON.stringify(this.exited) : 'running'}\n` +
      `--- stdout ---\n${this.stdout}--- stderr ---\n${this.stderr.slice(-20000)}--- end ---`;
  }

  assertAlive() {
    if (this.exited) throw new Error(`sluice-kube died: ${this.describe()}`);
  }

  // CA certificate (PEM) when TLS is on.
  ca() {
    return this.opts.tls ? fs.readFileSync(this.certPath()) : null;
  }

  env(extra = {}) {
    return { ...process.env, KUBECONFIG: this.kubeconfig, KUBECACHEDIR: this.cacheDir, ...extra };
  }

  // Runs kubectl; resolves {code, stdout (Buffer), stderr (string)}.
  kubectl(args, { env = {}, input = null, timeoutMs = 60000, stdinStream = null } = {}) {
    return new Promise((resolve, reject) => {
      const p = spawn(KUBECTL, ['--cache-dir', this.cacheDir, ...args],
        { env: this.env(env), stdio: ['pipe', 'pipe', 'pipe'] });
      const out = [];
      let err = '';
      p.stdout.on('data', (d) => out.push(d));
      p.stderr.on('data', (d) => { err += d; });
      const timer = setTimeout(() => {
        p.kill('SIGKILL');
        reject(new Error(`kubectl ${args.join(' ')}: no exit in ${timeoutMs} ms; stderr: ${err}`));
      }, timeoutMs);
      p.on('error', reject);
      p.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout: Buffer.concat(out), stderr: err });
      });
      p.stdin.on('error', () => {}); // kubectl may exit before reading it all
      if (stdinStream) stdinStream(p);
      else if (input !== null) p.stdin.end(input);
      else p.stdin.end();
    });
  }

  // Spawns kubectl and leaves it running (port-forward, logs -f).
  spawnKubectl(args, { env = {} } = {}) {
    return spawn(KUBECTL, ['--cache-dir', this.cacheDir, ...args],
      { env: this.env(env), stdio: ['pipe', 'pipe', 'pipe'] });
  }

  // A raw request to the front: {status, headers, body (Buffer)}.
  async request(pathname, { method = 'GET', headers = {}, token = this.opts.token } = {}) {
    const mod = this.opts.tls ? await import('node:https') : await import('node:http');
    const h = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    return new Promise((resolve, reject) => {
      const req = mod.request(`${this.url}${pathname}`,
        { method, headers: h, ca: this.ca() ?? undefined, agent: false }, (res) => {
          const chunks = [];
          res.on('data', (d) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
            body: Buffer.concat(chunks) }));
        });
      req.on('error', reject);
      req.end();
    });
  }

  async stop() {
    if (!this.exited) {
      this.proc.kill('SIGTERM');
      const res = await Promise.race([this.exitPromise, sleep(STOP_TIMEOUT_MS).then(() => null)]);
      if (!res) {
        this.proc.kill('SIGKILL');
        throw new Error(`sluice-kube: no exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`);
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    const mark = SANITIZER_MARKS.find((m) => this.stderr.includes(m));
    if (this.exited.code !== 0 || mark)
      throw new Error(`sluice-kube: unclean exit: ${this.describe()}`);
  }

  destroy() {
    if (this.proc && !this.exited) this.proc.kill('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// ---- helpers shared by the kube tests ----

export function sha256(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

// Polls until something accepts TCP connections on 127.0.0.1:port.
export async function waitListening(port, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await sleep(100);
  }
}

// GET http://127.0.0.1:port/pathname; resolves {status, sha256, length}.
export function httpHash(port, pathname) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: pathname, agent: false }, (res) => {
      const h = crypto.createHash('sha256');
      let length = 0;
      res.on('data', (d) => { h.update(d); length += d.length; });
      res.on('end', () => resolve({ status: res.statusCode, sha256: h.digest('hex'), length }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

// Waits for a line matching re on a child's stream; resolves the match.
export function waitOutput(stream, re, ms = 20000, what = String(re)) {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => {
      stream.off('data', on);
      reject(new Error(`${what}: not seen in ${ms} ms; got ${JSON.stringify(text.slice(-2000))}`));
    }, ms);
    function on(d) {
      text += d;
      const m = re.exec(text);
      if (m) {
        clearTimeout(timer);
        stream.off('data', on);
        resolve(m);
      }
    }
    stream.on('data', on);
  });
}

// sluiced's RunPodSandbox fails now and then with "pod monitor did not
// start within 10000 ms" long before 10 s (src/sluiced/cri/mon_client.c:
// read_all stops at poll()'s EINTR, and the monitor it gave up on keeps
// running). Not sluice-kube's business: retry, and count it so the final
// leftover check can say why.
export const monitorFlakes = { count: 0 };
export async function runPodRetry(sd, name, opts) {
  for (let i = 0; ; i++) {
    try {
      return await sd.runPod(name, opts);
    } catch (e) {
      if (i >= 9 || !/pod monitor did not start/.test(e.message)) throw e;
      monitorFlakes.count++;
      await sleep(300);
    }
  }
}

// sd.stop(), except that monitors left by the flake above make the test
// TODO rather than failed (any other problem still fails it).
export async function stopSluiced(sd, t) {
  try {
    await sd.stop();
  } catch (e) {
    const first = e.message.split('\n')[0];
    if (monitorFlakes.count && /^left behind: sluice-mon pid \d+(; sluice-mon pid \d+)*$/.test(first)) {
      t.todo(`sluiced left the monitors of ${monitorFlakes.count} failed RunPodSandbox calls`);
      return;
    }
    throw e;
  }
}
