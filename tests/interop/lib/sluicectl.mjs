// Helpers for the sluicectl tests: run the binary, drive it in a real
// terminal (tmux), and stand-in servers for the failure cases (a fake CRI
// server whose Exec/PortForward answers are programmable, a streaming
// server that refuses or breaks sessions, sockets that are not gRPC).
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import { loadCriPackage } from './cri.mjs';
import { REPO } from './hostd.mjs';
import { SLUICED } from './sluiced.mjs';

// $SLUICECTL, else the sluicectl of the same build as $SLUICED, else build/.
export const SLUICECTL = process.env.SLUICECTL
  ? path.resolve(process.env.SLUICECTL)
  : process.env.SLUICED
    ? path.resolve(path.dirname(SLUICED), '../sluicectl/sluicectl')
    : path.join(REPO, 'build/src/sluicectl/sluicectl');

const RUN_TIMEOUT_MS = 60000;

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function sha256(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

export function tmpDir(label) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `ctl-${label}-`));
}

// Runs sluicectl ARGS; resolves {code, signal, stdout, stderr} (Buffers
// as strings unless raw). input: Buffer/string written to stdin then
// closed (stdin is /dev/null without it, unless keepStdin).
export function ctl(args, { input, env, timeoutMs = RUN_TIMEOUT_MS, raw = false, keepStdin } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(SLUICECTL, args, {
      stdio: [input !== undefined || keepStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    const out = [];
    const err = [];
    p.stdout.on('data', (d) => out.push(d));
    p.stderr.on('data', (d) => err.push(d));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`sluicectl ${args.join(' ')} still running after ${timeoutMs} ms; ` +
        `stderr: ${Buffer.concat(err).toString()}`));
    }, timeoutMs);
    p.on('error', reject);
    if (input !== undefined) {
      p.stdin.on('error', () => {});
      p.stdin.end(input);
    }
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      const o = Buffer.concat(out);
      const e = Buffer.concat(err).toString();
      resolve({ code, signal, stdout: raw ? o : o.toString(), stderr: e });
    });
  });
}

// A long-running sluicectl (port-forward): resolves once `ready` matches
// its stdout. Returns {proc, out(), err(), stop(signal) → {code, signal}}.
export async function ctlBackground(args, { ready, timeoutMs = 20000, env } = {}) {
  const p = spawn(SLUICECTL, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => { stdout += d; });
  p.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal })));
  const end = Date.now() + timeoutMs;
  while (ready && !ready.test(stdout)) {
    if (p.exitCode !== null || Date.now() > end) {
      p.kill('SIGKILL');
      throw new Error(`sluicectl ${args.join(' ')} not ready: stdout ${stdout} stderr ${stderr}`);
    }
    await sleep(20);
  }
  return {
    proc: p,
    out: () => stdout,
    err: () => stderr,
    exited,
    async stop(signal = 'SIGINT') {
      if (p.exitCode === null && p.signalCode === null) p.kill(signal);
      return exited;
    },
  };
}

// ---- TCP helpers (port-forward) --------------------------------------------

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Connects, writes payload, half-closes, and reads until `expect` bytes
// came back (or the peer ended). Resolves {data, error}.
export function tcpRoundTrip(port, payload, { expect = payload.length, timeoutMs = 60000 } = {}) {
  return new Promise((resolve) => {
    const chunks = [];
    let got = 0;
    let done = false;
    const s = net.connect(port, '127.0.0.1');
    const finish = (error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ data: Buffer.concat(chunks), error });
    };
    const timer = setTimeout(() => finish(new Error(`timeout after ${got} bytes`)), timeoutMs);
    s.on('connect', () => {
      s.write(payload);
      s.end();
    });
    s.on('data', (d) => {
      chunks.push(d);
      got += d.length;
      if (got >= expect) finish(null);
    });
    s.on('end', () => finish(null));
    s.on('error', (e) => finish(e));
  });
}

// ---- tmux: a real terminal --------------------------------------------------

export function haveTmux() {
  return spawnSync('tmux', ['-V']).status === 0;
}

export class Tmux {
  constructor(name) {
    this.name = `ctl-${name}-${process.pid}`;
    this.sock = path.join(os.tmpdir(), `tmux-${this.name}`);
  }

  tmux(...args) {
    const r = spawnSync('tmux', ['-S', this.sock, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  start(cmd, { width = 100, height = 30 } = {}) {
    this.tmux('new-session', '-d', '-s', this.name, '-x', String(width), '-y', String(height), cmd);
  }

  keys(...k) {
    this.tmux('send-keys', '-t', this.name, ...k);
  }

  resize(width, height) {
    this.tmux('resize-window', '-t', this.name, '-x', String(width), '-y', String(height));
  }

  screen() {
    return this.tmux('capture-pane', '-p', '-t', this.name);
  }

  async waitScreen(re, ms = 15000) {
    const end = Date.now() + ms;
    for (;;) {
      const s = this.screen();
      if (re.test(s)) return s;
      if (Date.now() > end) throw new Error(`screen never matched ${re}:\n${s}`);
      await sleep(50);
    }
  }

  kill() {
    spawnSync('tmux', ['-S', this.sock, 'kill-server'], { stdio: 'ignore' });
    fs.rmSync(this.sock, { force: true });
  }
}

// ---- stand-in servers ---------------------------------------------------------

// A unix socket server that accepts and then does `mode`: 'close' (closes at
// once), 'silent' (never answers), 'http1' (answers an HTTP/1.1 400).
export function fakeSocket(sockPath, mode) {
  const conns = new Set();
  const srv = net.createServer((c) => {
    conns.add(c);
    c.on('close', () => conns.delete(c));
    c.on('error', () => {});
    if (mode === 'close') c.destroy();
    else if (mode === 'http1') c.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
  });
  return new Promise((resolve) => srv.listen(sockPath, () => resolve({
    close: () => new Promise((r) => {
      for (const c of conns) c.destroy();
      srv.close(() => r());
    }),
  })));
}

// A streaming server stand-in on 127.0.0.1. modes (per request, in turn):
//  'ws403'   a WebSocket upgrade gets a bare 403 (what the Go servers send)
//  'spdy403' a 403 naming the protocols it accepts (X-Accepted-...)
//  'cut'     101 for SPDY, then the connection is cut after cutMs
// Records each request head in `requests`.
export function fakeStreamServer(modes, { cutMs = 300 } = {}) {
  const requests = [];
  const sockets = new Set();
  const srv = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('error', () => {});
    let head = '';
    c.on('data', (d) => {
      if (head.includes('\r\n\r\n')) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      requests.push(head);
      const mode = modes[Math.min(requests.length - 1, modes.length - 1)];
      if (mode === 'ws403') {
        c.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      } else if (mode === 'spdy403') {
        const body = 'unable to upgrade: unable to negotiate protocol';
        c.end('HTTP/1.1 403 Forbidden\r\nX-Accepted-Stream-Protocol-Versions: v9.channel.example\r\n' +
          `X-Accepted-Stream-Protocol-Versions: v8.channel.example\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      } else {
        const proto = /x-stream-protocol-version: *(\S+)/i.exec(head)?.[1] || 'v4.channel.k8s.io';
        c.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
          `X-Stream-Protocol-Version: ${proto}\r\n\r\n`);
        setTimeout(() => c.destroy(), cutMs);
      }
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    url: (kind) => `http://127.0.0.1:${srv.address().port}/${kind}/fake-token`,
    requests,
    close: () => new Promise((r) => {
      for (const s of sockets) s.destroy();
      srv.close(() => r());
    }),
  })));
}

// A CRI server stand-in (grpc-js on a unix socket) knowing one container
// "fake-ctr" in pod "fake-pod". handlers.Exec/Attach/PortForward(req) →
// url (may be async). Every other RuntimeService call is UNIMPLEMENTED.
export async function fakeCri(sockPath, handlers) {
  const pkg = loadCriPackage();
  const server = new grpc.Server();
  const unary = (fn) => (call, cb) => {
    Promise.resolve().then(() => fn(call.request)).then((r) => cb(null, r),
      (e) => cb({ code: e.code ?? grpc.status.INTERNAL, details: e.message }));
  };
  const impl = {
    Version: unary(() => ({ version: '0.1.0', runtime_name: 'fake', runtime_version: '0.0.1',
      runtime_api_version: 'v1' })),
    ListContainers: unary(() => ({ containers: [{ id: 'fake-ctr', pod_sandbox_id: 'fake-pod',
      metadata: { name: 'fake', attempt: 0 }, image: { image: 'x' }, image_ref: 'x', state: 1,
      created_at: String(Date.now() * 1e6) }] })),
    ListPodSandbox: unary(() => ({ items: [{ id: 'fake-pod', metadata: { name: 'fake', uid: 'u',
      namespace: 'n', attempt: 0 }, state: 0, created_at: String(Date.now() * 1e6) }] })),
    Exec: unary(async (req) => ({ url: await handlers.Exec(req) })),
    Attach: unary(async (req) => ({ url: await handlers.Attach(req) })),
    PortForward: unary(async (req) => ({ url: await handlers.PortForward(req) })),
  };
  const full = {};
  for (const m of Object.keys(pkg.RuntimeService.service)) {
    full[m] = impl[m] || ((call, cb) => cb({ code: grpc.status.UNIMPLEMENTED, details: `${m} is not faked` }));
  }
  server.addService(pkg.RuntimeService.service, full);
  await new Promise((resolve, reject) => server.bindAsync(`unix://${sockPath}`,
    grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())));
  return { endpoint: `unix://${sockPath}`, close: () => new Promise((r) => server.tryShutdown(() => r())) };
}
