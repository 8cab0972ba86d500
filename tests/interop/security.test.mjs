// The container security context, seen from inside the container: every
// case runs a busybox container through the CRI (grpc-js) on sluiced and,
// where containerd 1.6 (the reference, scripts/containerd) accepts the same
// config, on containerd too, and compares what the process sees:
// /proc/self/status (Cap*, NoNewPrivs, Seccomp, Uid, Gid, Groups), `id`,
// mounts, /dev, and the errno of the system calls the RuntimeDefault
// profiles block (a static probe built here from c/seccomp_probe.c).
// Where containerd 1.6 differs on purpose or by a known bug, the test pins
// containerd's value and says why (docs/compatibility.md has the table).
// Bad values get INVALID_ARGUMENT naming the field, and sluiced keeps serving.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, status as grpcStatus } from './lib/cri.mjs';
import { REPO } from './lib/hostd.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason } from './lib/sluiced.mjs';

const SCRIPT = path.join(REPO, 'scripts/containerd');
const CONTAINERD_DIR = process.env.SLUICE_SECURITY_CONTAINERD_DIR ||
  '/run/sluice-test/containerd-security';
const USERS_IMAGE = 'localhost/sluice/busybox-users:latest';
const APP_IMAGE = 'localhost/sluice/busybox-app:latest';
const START_TIMEOUT_MS = 120000;
const EXIT_WAIT_MS = 20000;
const CASE_TIMEOUT_MS = 60000;
// runc's default set (14 capabilities) as /proc/self/status shows it.
const DEFAULT_CAPS = '00000000a80425fb';
const CAP = { CHOWN: 0, NET_BIND_SERVICE: 10, NET_ADMIN: 12, NET_RAW: 13, SYS_ADMIN: 21 };
// What the kubelet sends for a non-privileged container (procMount Default).
const KUBELET_MASKED = ['/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys',
  '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug',
  '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap'];
const KUBELET_READONLY = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];
// System calls the RuntimeDefault profile must stop with EPERM.
const BLOCKED = ['keyctl', 'add_key', 'request_key', 'mount', 'umount2', 'unshare', 'setns',
  'ptrace', 'kexec_load', 'bpf', 'perf_event_open', 'open_by_handle_at', 'reboot', 'swapon',
  'init_module', 'finit_module', 'delete_module'];
// Of those, the ones the probe's arguments make fail otherwise once they
// pass the filter (no capability check comes first in the kernel).
const REACHABLE = { keyctl: 'EOPNOTSUPP', add_key: 'EFAULT', request_key: 'EFAULT',
  mount: 'EFAULT', umount2: 'EINVAL', unshare: 'EINVAL', setns: 'EBADF', ptrace: 'ESRCH',
  perf_event_open: 'EFAULT' };

const PROBE_SH = "grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' " +
  '/proc/self/status; echo "id:$(id)"';
const STATUS_KEYS = ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp',
  'Uid', 'Gid', 'Groups', 'id'];

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function containerdSkipReason() {
  for (const c of ['containerd', 'ctr', 'runc'])
    if (!have(c)) return `${c} not installed (apt-get install containerd runc)`;
  return false;
}

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, encoding: 'utf8',
    timeout: START_TIMEOUT_MS });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// "Key:\tvalue" lines of the probe (and "id:..."), by key.
function parseProbe(out) {
  const v = {};
  for (const line of out.split('\n')) {
    const m = /^(\w+):\s*(.*)$/.exec(line);
    if (m) v[m[1]] = m[2].trim();
  }
  return v;
}

// "name ERRNO" lines of the seccomp probe.
function parseSyscalls(out) {
  return Object.fromEntries(out.split('\n').map((l) => l.split(' ')).filter((f) => f.length === 2));
}

function capHex(bits) {
  let v = 0n;
  for (const b of bits) v |= 1n << BigInt(b);
  return v.toString(16).padStart(16, '0');
}

function capBndOf(pid) {
  return /\nCapBnd:\s*([0-9a-f]+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1];
}

// The text of a CRI log file, both streams in order.
function readLog(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)
    .map((l) => l.split(' ').slice(3).join(' ')).join('\n');
}

// One runtime behind the CRI: host-network pods (one privileged, one not)
// and containers that run a command to completion.
class Runtime {
  constructor(name, rt, logDir) {
    this.name = name;
    this.rt = rt;
    this.logDir = logDir;
    this.pods = {};
    this.n = 0;
  }

  podConfig(privileged, extra = {}) {
    const n = ++this.n;
    return {
      metadata: { name: `sec-${n}`, uid: `sec-${this.name}-${process.pid}-${n}`,
        namespace: 'sluice-test', attempt: 0 },
      log_directory: this.logDir,
      linux: { security_context: { privileged,
        namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' }, ...extra } },
    };
  }

  async pod(privileged) {
    const key = privileged ? 'priv' : 'plain';
    if (!this.pods[key]) {
      const config = this.podConfig(privileged);
      const { pod_sandbox_id: id } = await this.rt.RunPodSandbox({ config });
      this.pods[key] = { id, config };
    }
    return this.pods[key];
  }

  // podPrivileged: which pod (default: a privileged one for a privileged container).
  async create(name, { sc = {}, cmd = PROBE_SH, image = BUSYBOX_IMAGE, podPrivileged,
    mounts = [] } = {}) {
    const pod = await this.pod(podPrivileged ?? !!sc.privileged);
    const n = `${name}-${++this.n}`;
    const config = { metadata: { name: n, attempt: 0 }, image: { image },
      command: ['sh', '-c', cmd], log_path: `${n}.log`, mounts,
      linux: { security_context: sc } };
    const { container_id: id } = await this.rt.CreateContainer({ pod_sandbox_id: pod.id, config,
      sandbox_config: pod.config });
    return { id, log: path.join(this.logDir, `${n}.log`) };
  }

  // Runs to completion; {out, exit, status, v (parsed probe)}.
  async run(name, opts = {}) {
    const { id, log } = await this.create(name, opts);
    try {
      await this.rt.StartContainer({ container_id: id });
      const end = Date.now() + EXIT_WAIT_MS;
      let status;
      for (;;) {
        ({ status } = await this.rt.ContainerStatus({ container_id: id }));
        if (status.state === 'CONTAINER_EXITED') break;
        if (Date.now() > end) throw new Error(`${this.name} ${name}: not exited: ${JSON.stringify(status)}`);
        await sleep(50);
      }
      const out = readLog(log);
      return { out, exit: status.exit_code, status, v: parseProbe(out) };
    } finally {
      await this.rt.RemoveContainer({ container_id: id }).catch(() => {});
    }
  }

  // The CreateContainer error (null when it was accepted).
  async refusal(name, opts) {
    try {
      const { id } = await this.create(name, opts);
      await this.rt.RemoveContainer({ container_id: id }).catch(() => {});
      return null;
    } catch (e) {
      return e;
    }
  }

  async removePods() {
    for (const p of Object.values(this.pods)) {
      await this.rt.StopPodSandbox({ pod_sandbox_id: p.id }).catch(() => {});
      await this.rt.RemovePodSandbox({ pod_sandbox_id: p.id }).catch(() => {});
    }
    this.pods = {};
  }
}

function skippable(name, reason, body) {
  if (reason) test(name, (t) => t.skip(reason));
  else describe(name, body);
}

skippable('container security context: sluiced against containerd', skipReason(), () => {
  const ctx = { tmp: null, sd: null, sl: null, cd: null, cdCri: null, cdStarted: false,
    cdSkip: containerdSkipReason(), cdEnv: {} };

  before(async () => {
    ctx.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-sec-'));
    ctx.probeDir = path.join(ctx.tmp, 'probe');
    fs.mkdirSync(ctx.probeDir);
    run('gcc', ['-static', '-O1', '-o', path.join(ctx.probeDir, 'seccomp_probe'),
      path.join(REPO, 'tests/interop/c/seccomp_probe.c')]);
    ctx.usersTar = path.join(ctx.tmp, 'users-oci.tar');
    run(path.join(REPO, 'scripts/busybox-image'), ['--users', ctx.usersTar]);
    writeProfiles();

    ctx.sd = await SluicedInstance.start({ label: 'sec' });
    fs.copyFileSync(ctx.usersTar, path.join(ctx.sd.importDir, 'users-oci.tar'));
    await ctx.sd.img.PullImage({ image: { image: USERS_IMAGE } });
    fs.mkdirSync(path.join(ctx.tmp, 'logs-sluiced'));
    ctx.sl = new Runtime('sluiced', ctx.sd.rt, path.join(ctx.tmp, 'logs-sluiced'));

    if (!ctx.cdSkip) await startContainerd();
  }, { timeout: START_TIMEOUT_MS });

  after(async () => {
    if (ctx.sl) await ctx.sl.removePods();
    if (ctx.cd) await ctx.cd.removePods();
    ctx.cdCri?.close();
    if (ctx.cdStarted) run(SCRIPT, ['stop', '--purge'], ctx.cdEnv);
    if (ctx.sd) await ctx.sd.stop();
    if (ctx.tmp) fs.rmSync(ctx.tmp, { recursive: true, force: true });
  }, { timeout: START_TIMEOUT_MS });

  async function startContainerd() {
    ctx.cdEnv = { SLUICE_CONTAINERD_DIR: CONTAINERD_DIR };
    if (spawnSync(SCRIPT, ['status'], { env: { ...process.env, ...ctx.cdEnv } }).status !== 0) {
      ctx.cdEnv.SLUICE_CONTAINERD_STREAM_PORT = String(await freePort());
      run(SCRIPT, ['start'], ctx.cdEnv);
      ctx.cdStarted = true;
    }
    const env = Object.fromEntries(run(SCRIPT, ['env'], ctx.cdEnv).trim().split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    run(SCRIPT, ['ctr', 'images', 'import', '--snapshotter', 'overlayfs', ctx.usersTar], ctx.cdEnv);
    ctx.cdPid = Number(/pid (\d+)/.exec(run(SCRIPT, ['status'], ctx.cdEnv))[1]);
    ctx.cdCri = await connectCri(env.CONTAINERD_ENDPOINT);
    fs.mkdirSync(path.join(ctx.tmp, 'logs-containerd'));
    ctx.cd = new Runtime('containerd', ctx.cdCri.runtime, path.join(ctx.tmp, 'logs-containerd'));
  }

  function writeProfiles() {
    const arches = { x64: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
      arm64: ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'] }[process.arch] ?? [];
    const profile = (syscalls) => JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW',
      architectures: arches, syscalls });
    ctx.profiles = {};
    const put = (name, text) => {
      ctx.profiles[name] = path.join(ctx.tmp, name);
      fs.writeFileSync(ctx.profiles[name], text);
    };
    put('no-mkdir.json', profile([{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO',
      errnoRet: 1 }]));
    put('invalid.json', '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [');
    put('unknown-call.json', profile([{ names: ['mkdir', 'no_such_call'],
      action: 'SCMP_ACT_ERRNO' }]));
    put('bad-action.json', profile([{ names: ['mkdir'], action: 'SCMP_ACT_SOMETIMES' }]));
    ctx.profiles.missing = path.join(ctx.tmp, 'missing.json');
  }

  const probeMount = () => [{ container_path: '/probe', host_path: ctx.probeDir, readonly: true }];

  // Runs the case on sluiced and, when given keys, on containerd, asserting
  // both see the same values for those keys. Resolves {sl, cd}.
  async function both(name, opts, keys = STATUS_KEYS) {
    const sl = await ctx.sl.run(name, opts);
    assert.equal(sl.exit, 0, `sluiced ${name}: ${sl.out}`);
    if (ctx.cdSkip || !keys) return { sl, cd: null };
    const cd = await ctx.cd.run(name, opts);
    assert.equal(cd.exit, 0, `containerd ${name}: ${cd.out}`);
    for (const k of keys)
      assert.equal(sl.v[k], cd.v[k], `${name}: ${k} differs (sluiced vs containerd)\n` +
        `sluiced:\n${sl.out}\ncontainerd:\n${cd.out}`);
    return { sl, cd };
  }

  describe('capabilities', () => {
    test('default: runc\'s 14 capabilities in bounding, effective, permitted; none inheritable or ambient', async () => {
      const { sl } = await both('caps-default', {});
      assert.equal(sl.v.CapEff, DEFAULT_CAPS);
      assert.equal(sl.v.CapPrm, DEFAULT_CAPS);
      assert.equal(sl.v.CapBnd, DEFAULT_CAPS);
      assert.equal(sl.v.CapInh, '0000000000000000');
      assert.equal(sl.v.CapAmb, '0000000000000000');
      assert.equal(sl.v.NoNewPrivs, '0');
      assert.equal(sl.v.Seccomp, '0', 'no profile asked: unconfined, as containerd');
    }, { timeout: CASE_TIMEOUT_MS });

    test('add NET_ADMIN, drop CHOWN and net_raw (lower case)', async () => {
      const sc = { capabilities: { add_capabilities: ['NET_ADMIN'],
        drop_capabilities: ['CHOWN', 'net_raw'] } };
      const { sl } = await both('caps-add-drop', { sc });
      const want = (BigInt(`0x${DEFAULT_CAPS}`) | (1n << 12n)) & ~1n & ~(1n << 13n);
      assert.equal(sl.v.CapEff, want.toString(16).padStart(16, '0'));
      assert.equal(sl.v.CapBnd, sl.v.CapEff);
    }, { timeout: CASE_TIMEOUT_MS });

    test('add ALL: every capability of the daemon\'s bounding set (no CAP_SYS_RESOURCE here)', async () => {
      const { sl } = await both('caps-all', { sc: { capabilities: { add_capabilities: ['ALL'] } } });
      assert.equal(sl.v.CapEff, capBndOf(ctx.sd.proc.proc.pid));
      assert.equal(sl.v.CapBnd, sl.v.CapEff);
    }, { timeout: CASE_TIMEOUT_MS });

    test('add ALL drop CHOWN; drop ALL add CHOWN, KILL; drop ALL', async () => {
      const bnd = BigInt(`0x${capBndOf(ctx.sd.proc.proc.pid)}`);
      const a = await both('caps-all-minus', { sc: { capabilities: { add_capabilities: ['ALL'],
        drop_capabilities: ['CHOWN'] } } });
      assert.equal(a.sl.v.CapEff, (bnd & ~1n).toString(16).padStart(16, '0'));
      const b = await both('caps-none-plus', { sc: { capabilities: {
        add_capabilities: ['CHOWN', 'KILL'], drop_capabilities: ['ALL'] } } });
      assert.equal(b.sl.v.CapEff, capHex([0, 5]));
      const c = await both('caps-none', { sc: { capabilities: { drop_capabilities: ['ALL'] } } });
      assert.equal(c.sl.v.CapEff, '0000000000000000');
      assert.equal(c.sl.v.CapBnd, '0000000000000000');
    }, { timeout: CASE_TIMEOUT_MS });

    test('CAP_ prefix accepted (containerd 1.6 turns it into CAP_CAP_SYS_ADMIN, which runc ignores)', async () => {
      const opts = { sc: { capabilities: { add_capabilities: ['CAP_SYS_ADMIN'] } } };
      const { sl } = await both('caps-prefix', opts, null);
      assert.equal(sl.v.CapEff, (BigInt(`0x${DEFAULT_CAPS}`) | (1n << 21n)).toString(16).padStart(16, '0'));
      if (ctx.cdSkip) return;
      const cd = await ctx.cd.run('caps-prefix', opts);
      assert.equal(cd.v.CapEff, DEFAULT_CAPS, 'containerd 1.6 drops a CAP_-prefixed name silently');
    }, { timeout: CASE_TIMEOUT_MS });

    test('ambient NET_BIND_SERVICE for uid 1000: effective after exec (containerd 1.6 clears ambient)', async () => {
      const opts = { sc: { run_as_user: { value: 1000 },
        capabilities: { add_ambient_capabilities: ['NET_BIND_SERVICE'] } } };
      const { sl } = await both('caps-ambient', opts, null);
      const bit = capHex([CAP.NET_BIND_SERVICE]);
      assert.equal(sl.v.CapAmb, bit);
      assert.equal(sl.v.CapInh, bit);
      assert.equal(sl.v.CapPrm, bit);
      assert.equal(sl.v.CapEff, bit);
      assert.match(sl.v.Uid, /^1000\s+1000\s+1000\s+1000$/);
      if (ctx.cdSkip) return;
      const cd = await ctx.cd.run('caps-ambient', opts);
      assert.equal(cd.v.CapAmb, '0000000000000000', 'containerd 1.6 ignores add_ambient_capabilities');
    }, { timeout: CASE_TIMEOUT_MS });

    test('a non-root user has no effective capabilities; no_new_privs from the request', async () => {
      const { sl } = await both('caps-nonroot', { sc: { run_as_user: { value: 1000 },
        no_new_privs: true } });
      assert.equal(sl.v.CapEff, '0000000000000000');
      assert.equal(sl.v.CapBnd, DEFAULT_CAPS);
      assert.equal(sl.v.NoNewPrivs, '1');
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('users and groups', () => {
    test('run_as_user, run_as_group, supplemental_groups; ContainerStatus.user reports them', async () => {
      const { sl } = await both('user-ids', { sc: { run_as_user: { value: 1000 },
        run_as_group: { value: 3000 }, supplemental_groups: [5000, 4000] } });
      assert.match(sl.v.Uid, /^1000\s+1000\s+1000\s+1000$/);
      assert.match(sl.v.Gid, /^3000\s+3000\s+3000\s+3000$/);
      assert.equal(sl.v.Groups, '3000 4000 5000');
      assert.equal(sl.v.id, 'uid=1000 gid=3000 groups=3000,4000,5000');
      assert.deepEqual(sl.status.user, { linux: { uid: '1000', gid: '3000',
        supplemental_groups: ['3000', '4000', '5000'] } });
    }, { timeout: CASE_TIMEOUT_MS });

    test('root: groups of the image\'s /etc/group that list root', async () => {
      const { sl } = await both('user-root', { image: USERS_IMAGE });
      assert.equal(sl.v.id, 'uid=0(root) gid=0(root) groups=0(root),10(wheel)');
    }, { timeout: CASE_TIMEOUT_MS });

    test('run_as_username resolved in the image\'s /etc/passwd, groups from its /etc/group', async () => {
      const { sl } = await both('user-name', { image: USERS_IMAGE,
        sc: { run_as_username: 'app', supplemental_groups: [7] } });
      assert.equal(sl.v.id,
        'uid=1000(app) gid=1000(app) groups=7,50(staff),63(audio),1000(app)');
      assert.deepEqual(sl.status.user.linux.supplemental_groups, ['7', '50', '63', '1000']);
    }, { timeout: CASE_TIMEOUT_MS });

    test('run_as_user of an image user takes its /etc/passwd group', async () => {
      const { sl } = await both('user-uid-group', { image: USERS_IMAGE,
        sc: { run_as_user: { value: 1001 } } });
      assert.equal(sl.v.id, 'uid=1001(web) gid=50(staff) groups=50(staff)');
    }, { timeout: CASE_TIMEOUT_MS });

    test('image USER app (containerd 1.6 merges root\'s groups instead: fixed in containerd 2.0)', async () => {
      const { sl } = await both('user-image', { image: APP_IMAGE }, null);
      assert.equal(sl.v.id, 'uid=1000(app) gid=1000(app) groups=50(staff),63(audio),1000(app)');
      // ImageStatus reports the USER: a name as username, no uid (critest checks both forms)
      const st = (await ctx.sd.img.ImageStatus({ image: { image: APP_IMAGE } })).image;
      assert.equal(st.username, 'app');
      assert.equal(st.uid, null);
      if (ctx.cdSkip) return;
      const cd = await ctx.cd.run('user-image', { image: APP_IMAGE });
      assert.equal(cd.v.id, 'uid=1000(app) gid=1000(app) groups=10(wheel),1000(app)');
    }, { timeout: CASE_TIMEOUT_MS });

    test('supplemental_groups_policy Strict: only the primary and the listed groups', async () => {
      const { sl } = await both('user-strict', { image: USERS_IMAGE,
        sc: { run_as_username: 'app', supplemental_groups: [7],
          supplemental_groups_policy: 'Strict' } }, null);
      assert.equal(sl.v.id, 'uid=1000(app) gid=1000(app) groups=7,1000(app)');
    }, { timeout: CASE_TIMEOUT_MS });

    // The kubelet (and critest) send Strict only to a runtime whose Status
    // says it applies it; an exec'd process (ExecSync, native path) gets the
    // container's groups too, under either policy.
    test('Status announces supplemental_groups_policy; exec\'d processes get the same groups', async () => {
      const st = await ctx.sd.rt.Status({ verbose: false });
      assert.equal(st.features?.supplemental_groups_policy, true);
      for (const [policy, want] of [
        ['Strict', 'uid=1000(app) gid=1000(app) groups=7,1000(app)'],
        ['Merge', 'uid=1000(app) gid=1000(app) groups=7,50(staff),63(audio),1000(app)'],
      ]) {
        const { id, log } = await ctx.sl.create(`groups-exec-${policy}`, { image: USERS_IMAGE,
          cmd: 'id; exec sleep 60',
          sc: { run_as_username: 'app', supplemental_groups: [7], supplemental_groups_policy: policy } });
        try {
          await ctx.sd.rt.StartContainer({ container_id: id });
          const r = await ctx.sd.execSync(id, ['id'], 30);
          assert.equal(r.exit_code, 0, r.stderr.toString());
          assert.equal(r.stdout.toString().trim(), want, `${policy}: ExecSync`);
          const end = Date.now() + 5000; // the monitor writes the log as the line comes
          while (!readLog(log).split('\n').includes(want) && Date.now() < end) await sleep(50);
          assert.equal(readLog(log), want, `${policy}: the container's own process`);
        } finally {
          await ctx.sd.rt.RemoveContainer({ container_id: id }).catch(() => {});
        }
      }
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('file system', () => {
    test('readonly_rootfs: writes fail with EROFS', async () => {
      const { sl } = await both('ro-rootfs', { sc: { readonly_rootfs: true },
        cmd: 'touch /x 2>&1; echo "rc:$?"; touch /tmp/x 2>&1; echo "tmp:$?"' }, ['rc', 'tmp']);
      assert.match(sl.out, /Read-only file system/);
      assert.equal(sl.v.rc, '1');
    }, { timeout: CASE_TIMEOUT_MS });

    const pathsCmd = 'echo "keys:$(wc -c < /proc/keys)"; echo "fw:$(ls -A /sys/firmware | wc -l)"; ' +
      "echo \"sys:$(awk '$5 == \"/proc/sys\" { print $6 }' /proc/self/mountinfo | cut -d, -f1)\"";

    test('masked and read-only paths as the kubelet sends them', async () => {
      const { sl } = await both('paths-kubelet', { cmd: pathsCmd,
        sc: { masked_paths: KUBELET_MASKED, readonly_paths: KUBELET_READONLY } },
      ['keys', 'fw', 'sys']);
      assert.equal(sl.v.keys, '0', '/proc/keys masked (bound to /dev/null)');
      assert.equal(sl.v.fw, '0');
      assert.equal(sl.v.sys, 'ro');
    }, { timeout: CASE_TIMEOUT_MS });

    test('no paths sent: sluiced masks the usual defaults (containerd 1.6 masks nothing)', async () => {
      const { sl } = await both('paths-none', { cmd: pathsCmd }, null);
      assert.equal(sl.v.keys, '0');
      assert.equal(sl.v.sys, 'ro');
      if (ctx.cdSkip) return;
      const cd = await ctx.cd.run('paths-none', { cmd: pathsCmd });
      // containerd 1.6 sets empty lists unless the kubelet sends them
      assert.notEqual(cd.v.keys, '0', 'containerd: /proc/keys readable');
      assert.equal(cd.v.sys, '', 'containerd: /proc/sys not a read-only mount of its own');
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('seccomp', () => {
    const probe = (sc) => ({ sc, mounts: probeMount(),
      cmd: "grep '^Seccomp:' /proc/self/status; /probe/seccomp_probe" });

    test('RuntimeDefault: Seccomp 2; the listed calls fail with EPERM, getpid works', async () => {
      const { sl, cd } = await both('seccomp-default',
        probe({ seccomp: { profile_type: 'RuntimeDefault' } }), ['Seccomp']);
      assert.equal(sl.v.Seccomp, '2');
      const calls = parseSyscalls(sl.out);
      for (const c of BLOCKED) assert.equal(calls[c], 'EPERM', `${c}: ${sl.out}`);
      assert.equal(calls.getpid, 'OK');
      if (!cd) return;
      const ref = parseSyscalls(cd.out);
      for (const c of BLOCKED.filter((x) => x !== 'ptrace'))
        assert.equal(ref[c], calls[c], `${c}: containerd ${ref[c]}, sluiced ${calls[c]}`);
      assert.equal(ref.ptrace, 'ESRCH', 'containerd 1.6 allows ptrace on kernels >= 4.8');
    }, { timeout: CASE_TIMEOUT_MS });

    test('Unconfined: Seccomp 0; the calls reach the kernel (its own errors, not EPERM)', async () => {
      const { sl, cd } = await both('seccomp-unconfined',
        probe({ seccomp: { profile_type: 'Unconfined' } }), ['Seccomp']);
      assert.equal(sl.v.Seccomp, '0');
      const calls = parseSyscalls(sl.out);
      for (const [c, want] of Object.entries(REACHABLE)) assert.equal(calls[c], want, c);
      if (cd) assert.deepEqual(parseSyscalls(cd.out), calls);
    }, { timeout: CASE_TIMEOUT_MS });

    test('RuntimeDefault with CAP_SYS_ADMIN added: mount, unshare, setns allowed', async () => {
      const sc = { seccomp: { profile_type: 'RuntimeDefault' },
        capabilities: { add_capabilities: ['SYS_ADMIN'] } };
      const { sl, cd } = await both('seccomp-admin', probe(sc), ['Seccomp']);
      const calls = parseSyscalls(sl.out);
      for (const c of ['mount', 'umount2', 'unshare', 'setns']) assert.equal(calls[c], REACHABLE[c], c);
      assert.equal(calls.keyctl, 'EPERM');
      if (cd) {
        const ref = parseSyscalls(cd.out);
        for (const c of ['mount', 'umount2', 'unshare', 'setns', 'keyctl']) assert.equal(ref[c], calls[c], c);
      }
      const m = await both('seccomp-admin-mount', { sc,
        cmd: 'mount -t tmpfs t /tmp && echo "mounted:$(awk \'$2 == "/tmp" { print $3 }\' /proc/mounts)"' },
      ['mounted']);
      assert.equal(m.sl.v.mounted, 'tmpfs');
    }, { timeout: CASE_TIMEOUT_MS });

    const mkdirCmd = "grep '^Seccomp:' /proc/self/status; mkdir /tmp/d 2>&1; echo \"rc:$?\"";

    test('Localhost: the profile file is applied (mkdir gets EPERM)', async () => {
      const { sl } = await both('seccomp-localhost', { cmd: mkdirCmd,
        sc: { seccomp: { profile_type: 'Localhost', localhost_ref: ctx.profiles['no-mkdir.json'] } } },
      ['Seccomp', 'rc']);
      assert.equal(sl.v.Seccomp, '2');
      assert.match(sl.out, /Operation not permitted/);
      assert.equal(sl.v.rc, '1');
    }, { timeout: CASE_TIMEOUT_MS });

    test('deprecated seccomp_profile_path: runtime/default, localhost/<path>, unconfined', async () => {
      const a = await both('seccomp-old-default', { cmd: mkdirCmd,
        sc: { seccomp_profile_path: 'runtime/default' } }, ['Seccomp', 'rc']);
      assert.equal(a.sl.v.Seccomp, '2');
      assert.equal(a.sl.v.rc, '0');
      const b = await both('seccomp-old-local', { cmd: mkdirCmd,
        sc: { seccomp_profile_path: `localhost/${ctx.profiles['no-mkdir.json']}` } }, ['Seccomp', 'rc']);
      assert.equal(b.sl.v.rc, '1');
      const c = await both('seccomp-old-unconfined', { cmd: mkdirCmd,
        sc: { seccomp_profile_path: 'unconfined' } }, ['Seccomp', 'rc']);
      assert.equal(c.sl.v.Seccomp, '0');
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('privileged', () => {
    const privCmd = `${PROBE_SH}; echo "devs:$(ls /dev | wc -l)"; ` +
      "echo \"sys:$(awk '$2 == \"/sys\" { print $4 }' /proc/mounts | cut -d, -f1)\"; " +
      "echo \"cg:$(awk '$2 ~ /^\\/sys\\/fs\\/cgroup\\// { print $4 }' /proc/mounts | cut -d, -f1 | sort -u)\"; " +
      'echo "keys:$(wc -c < /proc/keys)"';

    test('every capability of the daemon, host devices, /sys rw, nothing masked, no seccomp', async () => {
      const sc = { privileged: true, seccomp: { profile_type: 'RuntimeDefault' },
        masked_paths: KUBELET_MASKED };
      const { sl } = await both('privileged', { sc, cmd: privCmd },
        [...STATUS_KEYS, 'devs', 'sys', 'cg']);
      const bnd = capBndOf(ctx.sd.proc.proc.pid);
      assert.equal(bnd, '000001fffeffffff', 'this machine: every capability but CAP_SYS_RESOURCE');
      assert.equal(sl.v.CapEff, bnd);
      assert.equal(sl.v.CapBnd, bnd);
      assert.equal(sl.v.Seccomp, '0');
      assert.equal(sl.v.sys, 'rw');
      assert.equal(sl.v.cg, 'rw');
      assert.notEqual(sl.v.keys, '0', 'no masked paths');
      const hostDevs = fs.readdirSync('/dev').length;
      assert.ok(Number(sl.v.devs) >= hostDevs - 5, `/dev: ${sl.v.devs} in the container, ${hostDevs} on the host`);
      if (!ctx.cdSkip) assert.equal(capBndOf(ctx.cdPid), bnd);
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('AppArmor and SELinux', () => {
    test('AppArmor Unconfined accepted by both; RuntimeDefault a no-op here (containerd with disable_apparmor refuses it)', async () => {
      await both('apparmor-unconfined', { sc: { apparmor: { profile_type: 'Unconfined' } } },
        ['CapEff', 'Seccomp']);
      const opts = { sc: { apparmor: { profile_type: 'RuntimeDefault' } } };
      const { sl } = await both('apparmor-default', opts, null);
      assert.equal(sl.v.CapEff, DEFAULT_CAPS);
      const old = await ctx.sl.run('apparmor-old', { sc: { apparmor_profile: 'runtime/default' } });
      assert.equal(old.exit, 0);
      if (ctx.cdSkip) return;
      const err = await ctx.cd.refusal('apparmor-default', opts);
      assert.match(err?.details ?? '', /apparmor is not supported/);
    }, { timeout: CASE_TIMEOUT_MS });
  });

  describe('bad values: INVALID_ARGUMENT naming the field, sluiced keeps serving', () => {
    const P = 'linux.security_context.';
    const cases = [
      ['unknown capability', { capabilities: { add_capabilities: ['NET_ADMIN', 'BOGUS'] } },
        `${P}capabilities: add_capabilities: unknown capability "BOGUS"`],
      ['unknown capability to drop', { capabilities: { drop_capabilities: ['SYS_TIMETRAVEL'] } },
        'drop_capabilities: unknown capability "SYS_TIMETRAVEL"'],
      ['capability the daemon lacks', { capabilities: { add_capabilities: ['SYS_RESOURCE'] } },
        'add_capabilities: CAP_SYS_RESOURCE is not in sluiced\'s own bounding set'],
      ['missing seccomp file', () => ({ seccomp: { profile_type: 'Localhost',
        localhost_ref: ctx.profiles.missing } }),
      `${P}seccomp.localhost_ref: cannot read "`, 'No such file or directory'],
      ['invalid profile JSON', () => ({ seccomp: { profile_type: 'Localhost',
        localhost_ref: ctx.profiles['invalid.json'] } }),
      `${P}seccomp.localhost_ref: "`, 'invalid JSON at line 1'],
      ['unknown system call', () => ({ seccomp: { profile_type: 'Localhost',
        localhost_ref: ctx.profiles['unknown-call.json'] } }),
      'syscalls[0].names[1]: unknown system call "no_such_call"'],
      ['unknown seccomp action', () => ({ seccomp: { profile_type: 'Localhost',
        localhost_ref: ctx.profiles['bad-action.json'] } }),
      'syscalls[0].action: unknown action "SCMP_ACT_SOMETIMES"'],
      ['a profile that is not a file', () => ({ seccomp_profile_path: `localhost/${ctx.tmp}` }),
        `${P}seccomp_profile_path: cannot read`, 'not a regular file'],
      ['relative localhost_ref', { seccomp: { profile_type: 'Localhost', localhost_ref: 'p.json' } },
        `${P}seccomp.localhost_ref: "p.json" is not an absolute path`],
      ['localhost_ref without Localhost', { seccomp: { profile_type: 'RuntimeDefault',
        localhost_ref: '/p.json' } }, `${P}seccomp.localhost_ref: set, but profile_type is not Localhost`],
      ['unknown seccomp_profile_path', { seccomp_profile_path: 'docker/strict' },
        `${P}seccomp_profile_path: unknown profile "docker/strict"`],
      ['group without user', { run_as_group: { value: 5 } },
        `${P}run_as_group: set without run_as_user or run_as_username`],
      ['negative uid', { run_as_user: { value: -2 } }, `${P}run_as_user: -2 is not a valid id`],
      ['unknown user name', { run_as_username: 'nobody-here' },
        `${P}run_as_username: no user "nobody-here" in the image's /etc/passwd`],
      ['SELinux options', { selinux_options: { type: 'container_t' } },
        `${P}selinux_options: SELinux is not supported`],
      ['AppArmor Localhost', { apparmor: { profile_type: 'Localhost', localhost_ref: 'k8s-nginx' } },
        `${P}apparmor: Localhost profile "k8s-nginx" cannot be applied: this kernel has no AppArmor`],
      ['deprecated apparmor_profile localhost/', { apparmor_profile: 'localhost/k8s-nginx' },
        `${P}apparmor_profile: Localhost profile "k8s-nginx" cannot be applied`],
      ['relative masked path', { masked_paths: ['proc/keys'] },
        `${P}masked_paths: "proc/keys" is not an absolute path`],
      ['privileged container in a pod that is not', { privileged: true },
        `${P}privileged: no privileged container allowed in sandbox`],
    ];
    // What containerd 1.6 refuses too (it accepts the others, mostly by
    // ignoring them: runc skips unknown capabilities and system calls).
    const containerdRefuses = new Set(['missing seccomp file', 'invalid profile JSON',
      'group without user', 'unknown user name', 'AppArmor Localhost',
      'privileged container in a pod that is not', 'relative localhost_ref',
      'localhost_ref without Localhost', 'unknown seccomp_profile_path']);
    // What containerd creates, and runc then fails to start.
    const runcFails = {
      'capability the daemon lacks': /unable to apply caps: operation not permitted/,
      'unknown seccomp action': /SCMP_ACT_SOMETIMES is not a valid action/,
    };

    for (const [name, scOrFn, want, want2] of cases) {
      test(name, async () => {
        const sc = typeof scOrFn === 'function' ? scOrFn() : scOrFn;
        const err = await ctx.sl.refusal('bad', { sc, podPrivileged: false });
        assert.ok(err, `${name}: accepted`);
        assert.equal(err.code, grpcStatus.INVALID_ARGUMENT, err.details);
        assert.ok(err.details.includes(want), `"${err.details}" lacks "${want}"`);
        if (want2) assert.ok(err.details.includes(want2), `"${err.details}" lacks "${want2}"`);
        ctx.sd.assertAlive();
        if (ctx.cdSkip) return;
        if (runcFails[name]) {
          const { id } = await ctx.cd.create('bad', { sc, podPrivileged: false });
          const started = await ctx.cd.rt.StartContainer({ container_id: id }).then(() => null, (e) => e);
          await ctx.cd.rt.RemoveContainer({ container_id: id }).catch(() => {});
          assert.match(started?.details ?? '(started)', runcFails[name]);
          return;
        }
        if (!containerdRefuses.has(name)) return;
        const ref = await ctx.cd.refusal('bad', { sc, podPrivileged: false });
        assert.ok(ref, `containerd accepted ${name}`);
      }, { timeout: CASE_TIMEOUT_MS });
    }

    test('pod level: SELinux options, a group without a user, a missing seccomp file', async () => {
      const bad = [
        [{ selinux_options: { level: 's0:c1,c2' } }, `${P}selinux_options: SELinux is not supported`],
        [{ run_as_group: { value: 5 } }, `${P}run_as_group: set without run_as_user`],
        [{ seccomp: { profile_type: 'Localhost', localhost_ref: ctx.profiles.missing } },
          `${P}seccomp.localhost_ref: cannot read`],
        [{ apparmor: { profile_type: 'Localhost', localhost_ref: 'x' } }, `${P}apparmor: Localhost`],
      ];
      for (const [extra, want] of bad) {
        const config = ctx.sl.podConfig(false, extra);
        const err = await ctx.sd.rt.RunPodSandbox({ config }).then(() => null, (e) => e);
        assert.ok(err, `pod accepted: ${JSON.stringify(extra)}`);
        assert.equal(err.code, grpcStatus.INVALID_ARGUMENT);
        assert.ok(err.details.includes(want), `"${err.details}" lacks "${want}"`);
        if (ctx.cdSkip || extra.apparmor) continue;
        const ref = await ctx.cd.rt.RunPodSandbox({ config: ctx.cd.podConfig(false, extra) })
          .then((r) => r, (e) => e);
        if (ref.pod_sandbox_id) {
          await ctx.cd.rt.StopPodSandbox({ pod_sandbox_id: ref.pod_sandbox_id });
          await ctx.cd.rt.RemovePodSandbox({ pod_sandbox_id: ref.pod_sandbox_id });
          // containerd 1.6 without SELinux ignores the options
          assert.ok(extra.selinux_options, `containerd accepted ${JSON.stringify(extra)}`);
        }
      }
      const ok = ctx.sl.podConfig(false, { run_as_user: { value: 1000 }, run_as_group: { value: 5 },
        seccomp: { profile_type: 'RuntimeDefault' }, readonly_rootfs: true });
      const { pod_sandbox_id: id } = await ctx.sd.rt.RunPodSandbox({ config: ok });
      await ctx.sd.rt.StopPodSandbox({ pod_sandbox_id: id });
      await ctx.sd.rt.RemovePodSandbox({ pod_sandbox_id: id });
    }, { timeout: CASE_TIMEOUT_MS });

    test('still serving: Version, and a container runs', async () => {
      const v = await ctx.sd.rt.Version({ version: '' });
      assert.equal(v.runtime_name, 'sluice');
      const r = await ctx.sl.run('after-bad', {});
      assert.equal(r.exit, 0);
      assert.equal(r.v.CapEff, DEFAULT_CAPS);
    }, { timeout: CASE_TIMEOUT_MS });
  });
});
