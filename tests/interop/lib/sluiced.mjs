// Starts and stops sluiced (the CRI runtime daemon) in temp dirs for the
// interop tests, imports the busybox image, and has pod/container helpers.
//
//   const sd = await SluicedInstance.start({ cni: true });
//   const pod = await sd.runPod('web', { hostNetwork: false });
//   const ctr = await sd.runContainer(pod, 'c', { command: ['sleep', '1000'] });
//   ...
//   await sd.stop();   // removes every pod, SIGTERM (exit 0, sanitizer-clean),
//                      // then checks nothing is left: mounts, monitors,
//                      // runc containers, netns files, the bridge
//
// The binary comes from $SLUICED (CI points it at the ASan build), else
// <repo>/build/src/sluiced/sluiced; sluice-mon is found next to it by sluiced.
// Sanitizer reports of sluiced and of the monitors it starts go to
// <root>/sanitizer.<pid> (log_path), so a monitor's report survives the
// removal of its pod's run dir; stop() fails on any such file.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import { connectCri, loadCriPackage } from './cri.mjs';
import { REPO } from './hostd.mjs';

export const SLUICED = process.env.SLUICED
  ? path.resolve(process.env.SLUICED)
  : path.join(REPO, 'build/src/sluiced/sluiced');
export const SLUICE_MON = path.resolve(path.dirname(SLUICED), '../sluice-mon/sluice-mon');
export const CNI_BIN_DIR = process.env.SLUICE_CNI_BIN_DIR || '/usr/lib/cni';
export const BUSYBOX_IMAGE = 'localhost/sluice/busybox:latest';
export const PAUSE_IMAGE = 'localhost/sluice/pause:latest';

const START_TIMEOUT_MS = 20000;
const STOP_TIMEOUT_MS = 30000; // the ASan leak check at exit takes a while
const STOP_LEFTOVER_WAIT_MS = 5000; // monitors and reapers still exiting after a stop
const CALL_DEADLINE_MS = 30000;
const RAW_TIMEOUT_MS = 10000;
const BANNER = /^sluiced: CRI on (\S+) streaming on (https?:\/\/127\.0\.0\.1:(\d+)\/)$/m;
export const SANITIZER_MARKS = [
  'ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
  'ERROR: UndefinedBehaviorSanitizer',
];
const BUSYBOX = '/bin/busybox';
const CNI_PLUGINS = ['bridge', 'host-local', 'portmap', 'loopback'];
const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';

function readIpForward() {
  try {
    return fs.readFileSync(IP_FORWARD, 'utf8').trim();
  } catch {
    return null;
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Why these tests cannot run here (for node:test's skip), or false.
export function skipReason({ cni = false } = {}) {
  if (process.getuid?.() !== 0) return 'needs root (runc, mounts, namespaces)';
  if (spawnSync('runc', ['--version']).status !== 0) return 'runc is not installed';
  if (!fs.existsSync(BUSYBOX)) return `${BUSYBOX} missing (apt-get install busybox-static)`;
  const file = spawnSync('file', ['-b', BUSYBOX], { encoding: 'utf8' });
  if (file.status === 0 && !/statically linked/.test(file.stdout))
    return `${BUSYBOX} is not statically linked (busybox-static)`;
  if (!fs.existsSync(SLUICED)) return `no sluiced at ${SLUICED} (build it, or set SLUICED)`;
  if (!fs.existsSync(SLUICE_MON)) return `no sluice-mon at ${SLUICE_MON}`;
  if (cni) {
    const missing = CNI_PLUGINS.filter((p) => !fs.existsSync(path.join(CNI_BIN_DIR, p)));
    if (missing.length)
      return `CNI plugins ${missing.join(', ')} missing in ${CNI_BIN_DIR} ` +
        '(apt-get install containernetworking-plugins)';
    if (spawnSync('ip', ['-V']).status !== 0) return 'iproute2 (ip) is not installed';
  }
  return false;
}

// ---- the busybox image, built once per process ----------------------------

let imageTar = null;

export function busyboxImageTar() {
  if (imageTar && fs.existsSync(imageTar)) return imageTar;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bbimg-'));
  const out = path.join(dir, 'busybox-oci.tar');
  const r = spawnSync(path.join(REPO, 'scripts/busybox-image'), [out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`scripts/busybox-image failed: ${r.stderr}`);
  imageTar = out;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return out;
}

// ---- CNI ------------------------------------------------------------------

// Writes the default network config with scripts/cni-setup into confDir.
export function cniSetup(confDir, { bridge, subnet, dataDir } = {}) {
  const args = [];
  if (bridge) args.push('--bridge', bridge);
  if (subnet) args.push('--subnet', subnet);
  if (dataDir) args.push('--data-dir', dataDir);
  args.push(confDir);
  const r = spawnSync(path.join(REPO, 'scripts/cni-setup'), args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`scripts/cni-setup ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(fs.readFileSync(path.join(confDir, '10-sluice.conflist'), 'utf8'));
}

export function linkExists(name) {
  return spawnSync('ip', ['link', 'show', 'dev', name], { stdio: 'ignore' }).status === 0;
}

// ---- processes and leftovers ----------------------------------------------

export function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

// Pids of the sluice-mon processes whose command line names a path under root.
export function monitorsUnder(root) {
  return podProcsUnder(root, ['sluice-mon']);
}

// Pod monitors and their reapers (the monitor's parent: argv sluice-reaper RUN_DIR PID).
export function podProcsUnder(root, names = ['sluice-mon', 'sluice-reaper']) {
  const pids = [];
  for (const ent of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(ent)) continue;
    let argv;
    try {
      argv = fs.readFileSync(`/proc/${ent}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (names.includes(path.basename(argv[0] || '')) &&
      argv.some((a) => a.startsWith(root)) &&
      pidAlive(Number(ent)))
      pids.push(Number(ent));
  }
  return pids;
}

// Mount points at or below root (deepest first).
export function mountsUnder(root) {
  const out = [];
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f.length < 5) continue;
    const mp = f[4].replace(/\\040/g, ' ');
    if (mp === root || mp.startsWith(root + '/')) out.push(mp);
  }
  return out.sort((a, b) => b.length - a.length);
}

// runc containers in every pod's runc root under runDir.
function runcContainers(runDir) {
  const out = [];
  const pods = path.join(runDir, 'pods');
  let ids = [];
  try {
    ids = fs.readdirSync(pods);
  } catch {
    return out;
  }
  for (const id of ids) {
    const rroot = path.join(pods, id, 'runc');
    if (!fs.existsSync(rroot)) continue;
    const r = spawnSync('runc', ['--root', rroot, 'list', '-q'], { encoding: 'utf8' });
    for (const c of (r.stdout || '').split('\n').filter(Boolean)) out.push({ root: rroot, id: c });
  }
  return out;
}

// cgroup v1/v2 directories sluice made for these pods (cgroupsPath
// /sluice/<pod id prefix>/<container>).
function cgroupDirs(podIds) {
  const out = [];
  const base = '/sys/fs/cgroup';
  let ctrls = [];
  try {
    ctrls = fs.readdirSync(base);
  } catch {
    return out;
  }
  const tops = [path.join(base, 'sluice'), ...ctrls.map((c) => path.join(base, c, 'sluice'))];
  for (const top of tops) {
    for (const id of podIds) {
      const d = path.join(top, id.slice(0, 16));
      if (fs.existsSync(d)) out.push(d);
    }
  }
  return out;
}

function rmdirTree(dir) {
  // cgroup dirs: only rmdir works, children first
  let kids = [];
  try {
    kids = fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  } catch {
    return;
  }
  for (const k of kids) rmdirTree(path.join(dir, k.name));
  try {
    fs.rmdirSync(dir);
  } catch {
    // busy or gone
  }
}

// ---- the daemon process ---------------------------------------------------

export class SluicedProc {
  constructor(proc, root) {
    this.proc = proc;
    this.root = root;
    this.stdout = '';
    this.stderr = '';
    this.exited = null;
    proc.stdout.on('data', (d) => { this.stdout += d; });
    proc.stderr.on('data', (d) => { this.stderr += d; });
    this.exitPromise = new Promise((resolve) => {
      proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      });
    });
  }

  describe() {
    return `sluiced (${SLUICED}) ${this.exited ? JSON.stringify(this.exited) : 'running'}` +
      `\n--- stdout ---\n${this.stdout}--- stderr ---\n${this.stderr.slice(-20000)}--- end ---`;
  }

  async waitBanner() {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!BANNER.test(this.stdout)) {
      if (this.exited) throw new Error(`sluiced exited at start: ${this.describe()}`);
      if (Date.now() > deadline) {
        this.proc.kill('SIGKILL');
        throw new Error(`no banner in ${START_TIMEOUT_MS} ms: ${this.describe()}`);
      }
      await sleep(20);
    }
    const m = BANNER.exec(this.stdout);
    this.endpoint = m[1];
    this.streamBase = m[2];
    this.streamPort = Number(m[3]);
  }

  async waitExit(ms) {
    let timer;
    const res = await Promise.race([
      this.exitPromise,
      new Promise((resolve) => { timer = setTimeout(() => resolve(null), ms); }),
    ]);
    clearTimeout(timer);
    if (res) {
      await new Promise((resolve) => {
        if (this.proc.stderr.readableEnded) resolve();
        else this.proc.stderr.once('end', resolve);
      });
    }
    return res;
  }

  assertAlive() {
    if (this.exited) throw new Error(`sluiced died: ${this.describe()}`);
  }

  // SIGTERM (SIGKILL after ms); resolves what was wrong with the exit: no
  // exit in time, an unclean status, a sanitizer report on stderr.
  async terminate(ms = STOP_TIMEOUT_MS) {
    if (!this.exited) this.proc.kill('SIGTERM');
    const res = await this.waitExit(ms);
    if (!res) {
      this.proc.kill('SIGKILL');
      await this.exitPromise;
      return [`no exit within ${ms} ms of SIGTERM`];
    }
    const problems = [];
    if (res.code !== 0 || res.signal !== null) problems.push(`unclean exit ${JSON.stringify(res)}`);
    const mark = SANITIZER_MARKS.find((m) => this.stderr.includes(m));
    if (mark) problems.push(`sanitizer report in stderr ("${mark}")`);
    return problems;
  }

  // terminate(), throwing on any problem.
  async stop() {
    const problems = await this.terminate();
    if (problems.length) throw new Error(`${problems.join('; ')}: ${this.describe()}`);
  }
}

// ---- an instance: dirs + daemon + CRI client ------------------------------

let instanceCount = 0;

export class SluicedInstance {
  // opts: cni: false | true | {bridge, subnet}; label: dir name part;
  // args: extra flags.
  constructor(opts = {}) {
    this.opts = opts;
    // Short: a monitor socket <run>/pods/<64 hex>/mon.sock must fit
    // sun_path (108 bytes).
    const label = (opts.label || 'x').slice(0, 6);
    const tmp = os.tmpdir().length <= 16 ? os.tmpdir() : '/tmp';
    this.root = fs.mkdtempSync(path.join(tmp, `sd-${label}-`));
    // searchable by others, as /var/lib and /run are: the root of a pod with
    // a user namespace is an id that must reach the container's rootfs
    fs.chmodSync(this.root, 0o711);
    this.stateDir = path.join(this.root, 'state');
    this.runDir = path.join(this.root, 'run');
    this.cniDir = path.join(this.root, 'cni');
    this.importDir = path.join(this.stateDir, 'import');
    this.logRoot = path.join(this.root, 'logs');
    this.sock = path.join(this.runDir, 'sluice.sock');
    this.sanitizerLog = path.join(this.root, 'sanitizer');
    for (const d of [this.stateDir, this.runDir, this.cniDir, this.importDir, this.logRoot])
      fs.mkdirSync(d, { recursive: true });
    this.podIds = new Set(); // every pod this instance ever made, for cleanup
    this.proc = null;
    this.cri = null;
    this.procs = []; // every daemon started, for destroy()
    this.clients = []; // every CRI client made, closed by destroy()
    this.bridge = null;
    this.bridgeExisted = true;
    this.seq = ++instanceCount;
    this.n = 0;
  }

  static async start(opts = {}) {
    const sd = new SluicedInstance(opts);
    try {
      fs.copyFileSync(busyboxImageTar(), path.join(sd.importDir, 'busybox-oci.tar'));
      if (opts.cni) sd.enableCni(opts.cni === true ? {} : opts.cni);
      await sd.launch();
    } catch (e) {
      await sd.destroy();
      throw e;
    }
    return sd;
  }

  // Writes the CNI config (scripts/cni-setup) into this instance's conf
  // dir, with host-local's allocations kept under root.
  enableCni({ bridge, subnet } = {}) {
    this.ipamDir = path.join(this.root, 'ipam');
    this.cniConf = cniSetup(this.cniDir, { bridge, subnet, dataDir: this.ipamDir });
    this.bridge = this.cniConf.plugins[0].bridge;
    this.bridgeExisted = linkExists(this.bridge);
    this.ipForward = readIpForward();
    return this.cniConf;
  }

  args() {
    return [
      '--listen', `unix://${this.sock}`, '--state-dir', this.stateDir, '--run-dir', this.runDir,
      '--stream-port', '0', '--cni-conf-dir', this.cniDir, '--cni-bin-dir', CNI_BIN_DIR,
      '--import-dir', this.importDir, ...(this.opts.args || []),
    ];
  }

  env() {
    const add = (v, extra) => (!extra ? v : v ? `${v}:${extra}` : extra);
    return {
      ...process.env,
      // opts.asanOptions: e.g. a small quarantine where a test measures RSS
      ASAN_OPTIONS: add(add(process.env.ASAN_OPTIONS, `log_path=${this.sanitizerLog}`),
        this.opts.asanOptions || ''),
      UBSAN_OPTIONS: add(process.env.UBSAN_OPTIONS, `log_path=${this.sanitizerLog}`),
    };
  }

  // Starts the daemon on this instance's dirs (also after a kill) and
  // connects a CRI client. Refuses while the previous daemon still runs.
  async launch() {
    if (this.proc && !this.proc.exited)
      throw new Error(`sluiced (pid ${this.proc.proc.pid}) still runs: kill or stop it first`);
    this.cri?.close();
    this.cri = null;
    // this.binary: another copy of sluiced (an upgrade), else SLUICED
    // opts.nofile: the daemon's open-file limit (soft and hard), set by
    // prlimit, which execs it (same pid)
    const bin = this.binary || SLUICED;
    const [file, argv] = this.opts.nofile
      ? ['prlimit', [`--nofile=${this.opts.nofile}:${this.opts.nofile}`, '--', bin, ...this.args()]]
      : [bin, this.args()];
    this.proc = new SluicedProc(
      spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: this.env() }), this.root);
    this.procs.push(this.proc);
    await this.proc.waitBanner();
    this.endpoint = this.proc.endpoint;
    this.streamBase = this.proc.streamBase;
    this.cri = await connectCri(this.endpoint);
    this.clients.push(this.cri);
    this.rt = this.cri.runtime;
    this.img = this.cri.image;
  }

  assertAlive() {
    if (!this.proc || this.proc.exited) throw new Error(`sluiced is not running: ${this.describe()}`);
  }

  describe() {
    return this.proc ? this.proc.describe() : 'sluiced never started';
  }

  // SIGKILL the daemon (monitors and containers keep running).
  async kill() {
    this.cri?.close();
    this.cri = null;
    if (this.proc && !this.proc.exited) {
      this.proc.proc.kill('SIGKILL');
      await this.proc.exitPromise;
    }
  }

  async restart() {
    await this.kill();
    await this.launch();
  }

  // Sanitizer report files of sluiced and its monitors.
  sanitizerReports() {
    const base = path.basename(this.sanitizerLog);
    return fs.readdirSync(this.root).filter((f) => f.startsWith(`${base}.`))
      .map((f) => `${f}:\n${fs.readFileSync(path.join(this.root, f), 'utf8').slice(0, 8000)}`);
  }

  // ---- pods and containers ----

  podConfig(name, { hostNetwork = false, labels = {}, annotations = {}, hostname = '' } = {}) {
    const n = ++this.n;
    const logDir = path.join(this.logRoot, `${name}-${n}`);
    return {
      metadata: { name, uid: `uid-${this.seq}-${n}-${name}`, namespace: 'sluice-test', attempt: 0 },
      hostname,
      log_directory: logDir,
      labels,
      annotations,
      linux: {
        security_context: {
          namespace_options: { network: hostNetwork ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' },
        },
      },
    };
  }

  // RunPodSandbox; resolves {id, config}.
  async runPod(name, opts = {}) {
    const config = this.podConfig(name, opts);
    const r = await this.rt.RunPodSandbox({ config, runtime_handler: '' },
      { deadlineMs: CALL_DEADLINE_MS });
    this.podIds.add(r.pod_sandbox_id);
    return { id: r.pod_sandbox_id, config };
  }

  ctrConfig(name, { image = BUSYBOX_IMAGE, command = [], args = [], tty = false, stdin = false,
    stdinOnce = false, labels = {}, env = {}, logPath } = {}) {
    return {
      metadata: { name, attempt: 0 },
      image: { image },
      command,
      args,
      envs: Object.entries(env).map(([key, value]) => ({ key, value })),
      labels,
      log_path: logPath ?? `${name}.log`,
      tty,
      stdin,
      stdin_once: stdinOnce,
    };
  }

  async createContainer(pod, name, opts = {}) {
    const config = this.ctrConfig(name, opts);
    const r = await this.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config, sandbox_config: pod.config },
      { deadlineMs: CALL_DEADLINE_MS });
    return r.container_id;
  }

  async runContainer(pod, name, opts = {}) {
    const id = await this.createContainer(pod, name, opts);
    await this.rt.StartContainer({ container_id: id }, { deadlineMs: CALL_DEADLINE_MS });
    return id;
  }

  logPath(pod, name) {
    return path.join(pod.config.log_directory, `${name}.log`);
  }

  async status(ctrId) {
    return (await this.rt.ContainerStatus({ container_id: ctrId, verbose: false })).status;
  }

  // Polls ContainerStatus until its state is `state` (e.g. 'CONTAINER_EXITED').
  async waitState(ctrId, state, ms = 20000) {
    const end = Date.now() + ms;
    let st;
    for (;;) {
      st = await this.status(ctrId);
      if (st.state === state) return st;
      if (Date.now() > end)
        throw new Error(`container ${ctrId} not ${state} in ${ms} ms: ${JSON.stringify(st)}`);
      await sleep(100);
    }
  }

  async execSync(ctrId, cmd, timeout = 0, deadlineMs = CALL_DEADLINE_MS) {
    return this.rt.ExecSync({ container_id: ctrId, cmd, timeout }, { deadlineMs });
  }

  async execUrl(ctrId, cmd, { tty = false, stdin = false, stdout = true, stderr = !tty } = {}) {
    return (await this.rt.Exec({ container_id: ctrId, cmd, tty, stdin, stdout, stderr })).url;
  }

  async attachUrl(ctrId, { tty = false, stdin = false, stdout = true, stderr = !tty } = {}) {
    return (await this.rt.Attach({ container_id: ctrId, tty, stdin, stdout, stderr })).url;
  }

  async portForwardUrl(podId, ports = []) {
    return (await this.rt.PortForward({ pod_sandbox_id: podId, port: ports })).url;
  }

  // Stop + remove every pod the daemon lists (and every one we made).
  async removeAllPods() {
    const ids = new Set(this.podIds);
    const list = await this.rt.ListPodSandbox({}, { deadlineMs: CALL_DEADLINE_MS });
    for (const p of list.items) ids.add(p.id);
    for (const id of ids) {
      await this.rt.StopPodSandbox({ pod_sandbox_id: id }, { deadlineMs: CALL_DEADLINE_MS });
      await this.rt.RemovePodSandbox({ pod_sandbox_id: id }, { deadlineMs: CALL_DEADLINE_MS });
    }
  }

  // What is left of this instance on the machine: {left: [...], cgroups:
  // [...]} (cgroup dirs apart: runc removes only a container's own).
  leftovers() {
    const left = [];
    for (const m of mountsUnder(this.root)) left.push(`mount ${m}`);
    for (const pid of podProcsUnder(this.root)) left.push(`sluice-mon/sluice-reaper pid ${pid}`);
    for (const c of runcContainers(this.runDir)) left.push(`runc container ${c.id} (${c.root})`);
    const pods = path.join(this.runDir, 'pods');
    if (fs.existsSync(pods))
      for (const id of fs.readdirSync(pods)) left.push(`pod run dir ${path.join(pods, id)}`);
    return { left, cgroups: cgroupDirs([...this.podIds]) };
  }

  // The clean path: remove pods through CRI, SIGTERM (exit 0, no
  // sanitizer report), no mount, monitor, runc container or pod dir left.
  // Throws on any problem, after cleaning up anyway. Resolves {cgroups}:
  // the pods' cgroup dirs still there (removed here too).
  async stop() {
    const problems = [];
    try {
      this.assertAlive();
      await this.removeAllPods();
      const left = await this.rt.ListPodSandbox({});
      if (left.items.length) problems.push(`pods still listed: ${JSON.stringify(left.items)}`);
    } catch (e) {
      problems.push(`removing pods: ${e.stack || e}`);
    }
    this.cri?.close();
    this.cri = null;
    if (this.proc && !this.proc.exited) problems.push(...(await this.proc.terminate()));
    // Monitors and reapers finish their shutdown and exit: a few ms on an idle machine, over
    // 200 ms under ASan at load 20; a real leftover is still there after the wait.
    let { left, cgroups } = this.leftovers();
    for (let t = 0; left.length && t < STOP_LEFTOVER_WAIT_MS; t += 100) {
      await sleep(100);
      ({ left, cgroups } = this.leftovers());
    }
    if (left.length) problems.push(`left behind: ${left.join('; ')}`);
    const reports = this.sanitizerReports();
    if (reports.length) problems.push(`sanitizer reports:\n${reports.join('\n')}`);
    await this.destroy();
    if (problems.length)
      throw new Error(`${problems.join('\n')}\n${this.describe()}`);
    return { cgroups };
  }

  // The backstop (after hooks): whatever state we are in, remove pods if
  // the daemon answers, kill it, then force away every leftover and the
  // temp dirs. Never throws.
  async destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    try {
      if (this.proc && !this.proc.exited && this.cri) {
        await Promise.race([this.removeAllPods().catch(() => {}), sleep(20000)]);
      }
    } catch {
      // the daemon may be wedged: force below
    }
    this.cri = null;
    for (const c of this.clients) c.close(); // an open channel keeps node running
    for (const p of this.procs) {
      if (!p.exited) {
        p.proc.kill('SIGKILL');
        await p.exitPromise;
      }
    }
    for (const pid of podProcsUnder(this.root)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    for (const c of runcContainers(this.runDir))
      spawnSync('runc', ['--root', c.root, 'delete', '--force', c.id], { stdio: 'ignore' });
    for (const m of mountsUnder(this.root)) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
    for (const d of cgroupDirs([...this.podIds])) rmdirTree(d);
    if (this.bridge && !this.bridgeExisted && linkExists(this.bridge))
      spawnSync('ip', ['link', 'del', 'dev', this.bridge], { stdio: 'ignore' });
    // The bridge plugin (isGateway) turns IPv4 forwarding on; put it back.
    if (this.ipForward === '0') fs.writeFileSync(IP_FORWARD, '0');
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

// For after(): the backstop for any instances a file started.
export async function destroyAll(...insts) {
  for (const i of insts) if (i) await i.destroy();
}

// A RuntimeService client like lib/cri.mjs's but with its own receive
// limit (the kubelet's is 16 MiB; an ExecSync answer with a 16 MiB stdout
// is a little larger). Methods return promises.
export function runtimeClient(endpoint, maxReceive) {
  const pkg = loadCriPackage();
  const c = new pkg.RuntimeService(endpoint, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': maxReceive,
    'grpc.default_authority': 'localhost',
  });
  const api = { close: () => c.close() };
  for (const m of Object.keys(pkg.RuntimeService.service)) {
    api[m] = (req = {}, { deadlineMs = CALL_DEADLINE_MS } = {}) => new Promise((resolve, reject) => {
      c[m](req, new grpc.Metadata(), { deadline: new Date(Date.now() + deadlineMs) },
        (err, resp) => (err ? reject(err) : resolve(resp)));
    });
  }
  return api;
}

// ---- CRI log files (protocol notes §11) -----------------------------------

const CRI_LOG_LINE =
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d{1,9}))?(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([PF])(?::\S+)? (.*)$/s;

// Parses a CRI log file's text into {time, stream, tag, content}; throws
// on a line not in the format. RFC3339Nano: the fraction has its trailing
// zeros trimmed (and is absent when zero).
export function parseCriLog(text) {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => {
    const m = CRI_LOG_LINE.exec(l);
    if (!m) throw new Error(`not a CRI log line: ${JSON.stringify(l.slice(0, 200))}`);
    if (m[2] !== undefined && m[2].endsWith('0'))
      throw new Error(`RFC3339Nano fraction with a trailing zero: ${m[1]}`);
    if (Number.isNaN(Date.parse(m[1]))) throw new Error(`bad timestamp ${m[1]}`);
    return { time: m[1], stream: m[3], tag: m[4], content: m[5] };
  });
}

// Joins P records with their F record per stream into whole lines.
export function criLogLines(records, stream) {
  const out = [];
  let cur = '';
  for (const r of records) {
    if (stream && r.stream !== stream) continue;
    cur += r.content;
    if (r.tag === 'F') {
      out.push(cur);
      cur = '';
    }
  }
  return out;
}

// Waits until the file's records satisfy pred(records).
export async function waitLog(file, pred, what, ms = 15000) {
  const end = Date.now() + ms;
  let recs = [];
  for (;;) {
    try {
      recs = parseCriLog(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
      recs = [];
    }
    if (pred(recs)) return recs;
    if (Date.now() > end)
      throw new Error(`${what}: not in ${file} after ${ms} ms; got ${JSON.stringify(recs.slice(-10))}`);
    await sleep(100);
  }
}

export function wsUrl(url) {
  return url.replace(/^http:/, 'ws:').replace(/^https:/, 'wss:');
}

// ---- raw gRPC on the CRI socket ---------------------------------------------
// For requests a gRPC library will not produce: Node's http2 on the unix
// socket, and grpc-js with identity (de)serialisation.

export function h2connect(sock) {
  return new Promise((resolve, reject) => {
    const session = http2.connect('http://localhost', {
      createConnection: () => net.connect(sock),
    });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

// A length-prefixed message; len may lie about payload's length.
export function lpm(payload, flag = 0, len = payload.length) {
  const p = Buffer.alloc(5);
  p[0] = flag;
  p.writeUInt32BE(len, 1);
  return Buffer.concat([p, payload]);
}

// One request on session; resolves {http, headers, trailers, data, rst}.
// body is written, then the stream ended, unless keepOpen or rstAfterMs
// (the stream reset with CANCEL that long after, no END_STREAM).
export function rawCall(session, pathName, body, { headers = {}, keepOpen = false, rstAfterMs } = {}) {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST', ':path': pathName, 'content-type': 'application/grpc',
      te: 'trailers', ...headers,
    });
    const out = { http: 0, headers: {}, trailers: {}, data: Buffer.alloc(0), rst: null };
    const timer = setTimeout(() => {
      req.close();
      reject(new Error(`no answer to ${pathName} in ${RAW_TIMEOUT_MS} ms`));
    }, RAW_TIMEOUT_MS);
    req.on('response', (h) => {
      out.http = h[':status'];
      out.headers = h;
    });
    req.on('trailers', (tr) => { out.trailers = tr; });
    req.on('data', (d) => { out.data = Buffer.concat([out.data, d]); });
    req.on('error', () => {}); // RST_STREAM(NO_ERROR) after our answer is fine
    req.on('close', () => {
      clearTimeout(timer);
      out.rst = req.rstCode;
      resolve(out);
    });
    if (body) req.write(body);
    if (rstAfterMs !== undefined)
      setTimeout(() => req.close(http2.constants.NGHTTP2_CANCEL), rstAfterMs);
    else if (!keepOpen) req.end();
  });
}

// grpc-status/grpc-message from trailers, or from headers (Trailers-Only).
export function grpcStatus(r) {
  const src = r.trailers['grpc-status'] !== undefined ? r.trailers : r.headers;
  return {
    code: Number(src['grpc-status']),
    message: decodeURIComponent(src['grpc-message'] ?? ''),
  };
}

// A CRI request message's bytes, e.g. serialize('RuntimeService', 'Version', {}).
export function serialize(service, method, msg) {
  return loadCriPackage()[service].service[method].requestSerialize(msg);
}

// A grpc-js call to any path with raw bytes; resolves {err, resp}.
export function unaryRaw(endpoint, method, payload = Buffer.alloc(0), deadlineMs = 5000) {
  const client = new grpc.Client(endpoint, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(method, (b) => b, (b) => b, payload, new grpc.Metadata(),
      { deadline: new Date(Date.now() + deadlineMs) }, (err, resp) => {
        client.close();
        resolve({ err, resp });
      });
  });
}
