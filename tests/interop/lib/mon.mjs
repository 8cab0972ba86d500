// Drives sluice-mon (docs/mon-protocol.md) through tests/tools/mon-client,
// a C tool, because Node has no SEQPACKET sockets. Also builds busybox OCI
// bundles for runc.
//
// Binaries: $SLUICE_MON and $SLUICE_MON_CLIENT, else next to
// $SLUICE_HOSTD's build (<build>/src/sluice-mon/sluice-mon,
// <build>/tests/tools/mon-client), else <repo>/build.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from './hostd.mjs';

const BUILD = process.env.SLUICE_HOSTD
  ? path.resolve(process.env.SLUICE_HOSTD, '../..')
  : path.join(REPO, 'build');
export const MON = process.env.SLUICE_MON || path.join(BUILD, 'src/sluice-mon/sluice-mon');
export const MON_CLIENT = process.env.SLUICE_MON_CLIENT || path.join(BUILD, 'tests/tools/mon-client');
const BUSYBOX = '/bin/busybox';
const APPLETS = ['sh', 'cat', 'echo', 'sleep', 'stty', 'head', 'yes', 'true', 'tty', 'ls'];
const SANITIZER_MARKS = ['ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:'];

// Why the suite cannot run here, or null.
export function skipReason() {
  if (process.getuid?.() !== 0) return 'needs root (runc)';
  if (spawnSync('runc', ['--version']).status !== 0) return 'runc is not installed';
  if (!fs.existsSync(BUSYBOX)) return `${BUSYBOX} missing (apt-get install busybox-static)`;
  const file = spawnSync('file', ['-b', BUSYBOX], { encoding: 'utf8' });
  if (file.status === 0 && !/statically linked/.test(file.stdout))
    return `${BUSYBOX} is not statically linked (busybox-static)`;
  for (const bin of [MON, MON_CLIENT])
    if (!fs.existsSync(bin)) return `${bin} is not built`;
  return null;
}

// A read-only busybox root file system shared by every bundle.
export function makeRootfs(dir) {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.copyFileSync(BUSYBOX, path.join(bin, 'busybox'));
  fs.chmodSync(path.join(bin, 'busybox'), 0o755);
  for (const a of APPLETS) fs.symlinkSync('busybox', path.join(bin, a));
  for (const d of ['proc', 'dev', 'sys', 'tmp', 'etc']) fs.mkdirSync(path.join(dir, d));
  return dir;
}

// An OCI bundle from `runc spec`, with our args and terminal setting.
export function makeBundle(dir, rootfs, args, { terminal = false } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('runc', ['spec'], { cwd: dir });
  const cfgPath = path.join(dir, 'config.json');
  const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
  cfg.process.terminal = terminal;
  cfg.process.args = args;
  cfg.root = { path: rootfs, readonly: true };
  fs.writeFileSync(cfgPath, JSON.stringify(cfg, null, 1));
  return dir;
}

// One run of mon-client: JSON replies/events arrive on its fd 3, relayed
// container output on stdout/stderr.
export class MonClient {
  constructor(sock, requests, opts = {}) {
    const args = ['--json-fd', '3', '--timeout', String(opts.timeout ?? 20000)];
    if (opts.relay) args.push('--relay');
    if (opts.noRead) args.push('--no-read');
    if (opts.noHello) args.push('--no-hello');
    if (opts.raw) args.push('--raw');
    if (opts.waitEvent) args.push('--wait-event', opts.waitEvent);
    if (opts.match) args.push('--match', opts.match);
    args.push(sock, ...requests.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))));
    this.proc = spawn(MON_CLIENT, args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    this.messages = [];
    this.out = [];
    this.outLen = 0;
    this.err = '';
    this.waiters = [];
    let pending = '';
    this.proc.stdio[3].on('data', (d) => {
      pending += d;
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        this.messages.push(JSON.parse(pending.slice(0, nl)));
        pending = pending.slice(nl + 1);
      }
      this.wake();
    });
    this.proc.stdout.on('data', (d) => {
      this.out.push(d);
      this.outLen += d.length;
      this.wake();
    });
    this.proc.stderr.on('data', (d) => {
      this.err += d;
    });
    this.proc.stdin.on('error', () => {}); // the client may be gone already
    this.done = new Promise((resolve) => {
      this.proc.on('close', (code, signal) => {
        this.exit = { code, signal };
        this.wake();
        resolve(this.exit);
      });
    });
  }

  stdout() {
    return Buffer.concat(this.out);
  }

  replies() {
    return this.messages.filter((m) => m.type === 'reply');
  }

  events(type) {
    return this.messages.filter((m) => m.type === type);
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  // Resolves once pred(this) holds; rejects after ms or when the client
  // exited without it holding.
  until(pred, what, ms = 15000) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (pred(this)) return done(resolve);
        if (this.exit) return done(() => reject(new Error(`${what}: client exited ` +
          `${JSON.stringify(this.exit)}: ${this.err} ${JSON.stringify(this.messages)}`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error(
        `${what}: timeout; messages ${JSON.stringify(this.messages)}; stderr ${this.err}`))), ms);
      const done = (fn) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        fn();
      };
      this.waiters.push(check);
      check();
    });
  }

  write(data) {
    this.proc.stdin.write(data);
  }

  end() {
    this.proc.stdin.end();
  }
}

// Sends requests (after hello), waits for the client to finish; returns it.
// Throws when a request failed, unless opts.allowFail.
export async function call(sock, requests, opts = {}) {
  const c = new MonClient(sock, requests, opts);
  c.end();
  const res = await c.done;
  if (res.code !== 0 && !opts.allowFail)
    throw new Error(`mon-client exit ${JSON.stringify(res)}: ${c.err} ${JSON.stringify(c.messages)}`);
  return c;
}

// A monitor for one pod in dir (run and state dirs below it).
export class Mon {
  constructor(dir, podId) {
    this.dir = dir;
    this.podId = podId;
    this.runDir = path.join(dir, 'run');
    this.stateDir = path.join(dir, 'state');
    this.sock = path.join(this.runDir, 'mon.sock');
    this.pid = 0;
  }

  args() {
    return ['--pod-id', this.podId, '--run-dir', this.runDir, '--state-dir', this.stateDir,
      '--runtime', 'runc', '--log-level', 'debug'];
  }

  // Starts the monitor the way sluiced does: it detaches and the starter
  // exits 0 printing the monitor's pid once the socket listens.
  start() {
    const out = execFileSync(MON, this.args(), { encoding: 'utf8', timeout: 15000 });
    this.pid = Number(out.trim());
    return this;
  }

  alive() {
    return pidAlive(this.pid);
  }

  // The monitor's own log sits with the pod's state (STATE/pods/ID/mon.log).
  log() {
    try {
      return fs.readFileSync(path.join(this.stateDir, 'pods', this.podId, 'mon.log'), 'utf8');
    } catch {
      return '';
    }
  }

  sanitizerReport() {
    const log = this.log();
    return SANITIZER_MARKS.some((m) => log.includes(m)) ? log : null;
  }

  call(requests, opts) {
    return call(this.sock, requests, opts);
  }

  client(requests, opts) {
    return new MonClient(this.sock, requests, opts);
  }

  statusOf(id) {
    return JSON.parse(fs.readFileSync(path.join(this.stateDir, 'containers', id, 'status.json'),
      'utf8'));
  }

  // Backstop for a failed test: no monitor or container is left behind.
  kill() {
    if (this.pid && this.alive()) process.kill(this.pid, 'SIGKILL');
    spawnSync('sh', ['-c', `for c in $(runc --root ${this.runDir}/runc list -q 2>/dev/null); do ` +
      `runc --root ${this.runDir}/runc delete --force $c; done`]);
  }
}

export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    // a zombie still answers kill(0): look at its state
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

export async function waitFor(pred, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Parses a CRI log (protocol notes §11) into records.
export function parseCriLog(text) {
  const re = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) (stdout|stderr) ([PF]) (.*)$/s;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => {
    const m = re.exec(l);
    if (!m) throw new Error(`not a CRI log line: ${JSON.stringify(l.slice(0, 200))}`);
    if (m[1].includes('.') && m[1].endsWith('0Z')) throw new Error(`untrimmed fraction: ${m[1]}`);
    return { time: m[1], stream: m[2], tag: m[3], content: m[4] };
  });
}
