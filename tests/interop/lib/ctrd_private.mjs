// A private reference containerd (scripts/containerd) for one test file: its
// own directory and streaming port, so it never meets another helper's
// instance. Started when not running, stopped by the file that started it.
//
//   const ref = await PrivateContainerd.start('podns', 10137);
//   await ref.cri.runtime.RunPodSandbox(...);
//   await ref.stop();
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { connectCri } from './cri.mjs';
import { REPO } from './hostd.mjs';

const SCRIPT = path.join(REPO, 'scripts/containerd');
const START_TIMEOUT_MS = 120000;

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

// Why containerd cannot run here (for a test's skip), or false.
export function containerdSkipReason() {
  if (process.getuid?.() !== 0) return 'containerd needs root';
  for (const c of ['containerd', 'ctr', 'runc'])
    if (!have(c)) return `${c} not installed (apt-get install containerd runc)`;
  if (!existsSync('/bin/busybox')) return 'busybox-static not installed';
  return false;
}

function run(args, env) {
  const r = spawnSync(SCRIPT, args, {
    env: { ...process.env, ...env }, encoding: 'utf8', timeout: START_TIMEOUT_MS,
  });
  if (r.status !== 0)
    throw new Error(`scripts/containerd ${args.join(' ')} failed (${r.status ?? r.signal}):\n` +
      `${r.stdout}${r.stderr}`);
  return r.stdout;
}

// The port when nothing listens on it, else any free one.
function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function pickPort(preferred) {
  if (await portFree(preferred)) return preferred;
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export class PrivateContainerd {
  // name: a part of the directory name (/run/sluice-test/containerd-<name>);
  // port: its preferred streaming port (another free one when taken).
  static async start(name, port) {
    const ref = new PrivateContainerd();
    ref.vars = { SLUICE_CONTAINERD_DIR: `/run/sluice-test/containerd-${name}` };
    const up = spawnSync(SCRIPT, ['status'], { env: { ...process.env, ...ref.vars } }).status === 0;
    if (!up) ref.vars.SLUICE_CONTAINERD_STREAM_PORT = String(await pickPort(port));
    if (!up) {
      run(['start'], ref.vars);
      ref.startedHere = true;
    }
    ref.env = {};
    for (const line of run(['env'], ref.vars).trim().split('\n')) {
      const i = line.indexOf('=');
      ref.env[line.slice(0, i)] = line.slice(i + 1);
    }
    ref.cri = await connectCri(ref.env.CONTAINERD_ENDPOINT);
    return ref;
  }

  async stop() {
    this.cri?.close();
    this.cri = null;
    if (this.startedHere) run(['stop', '--purge'], this.vars);
    this.startedHere = false;
  }
}
