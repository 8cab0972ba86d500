// Container resources, looked at from inside the container: the cgroup v1
// files a container sees under /sys/fs/cgroup (memory and memsw limits, CFS
// quota and period, cpu shares, cpuset) and its init's oom_score_adj, at
// create and after UpdateContainerResources; ContainerStatus.resources;
// a container the OOM killer hits (EXITED, 137, "OOMKilled"); the pod's
// cgroup_parent (/proc/self/cgroup); huge page limits as the kubelet sends
// them; bad values (INVALID_ARGUMENT / UNIMPLEMENTED naming the field, and
// sluiced keeps serving). The same configs run against the reference
// containerd 1.6 (a private instance) and both must read the same values.
//
// Needs root, runc, busybox-static, and cgroup v1 (the paths read inside
// are v1's); the containerd part needs containerd and ctr.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, status as S } from './lib/cri.mjs';
import { REPO } from './lib/hostd.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const MIB = 1024 * 1024;
const CTRD = path.join(REPO, 'scripts/containerd');
// A containerd of our own (see docs: helpers share the machine).
const CTRD_ENV = {
  SLUICE_CONTAINERD_DIR: '/run/sluice-test/containerd-resources',
  SLUICE_CONTAINERD_STREAM_PORT: '10251',
};
const CALL_MS = 60000;
const CG_TOP = '/sluice-test-res'; // cgroup_parent prefix of this file's pods

function v1Reason() {
  if (fs.existsSync('/sys/fs/cgroup/cgroup.controllers'))
    return 'the values read inside the container are cgroup v1 files; this host has cgroup v2';
  if (!fs.existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes'))
    return 'no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory';
  return false;
}

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const skip = skipReason() || v1Reason();
const ctrdSkip = skip || (!have('containerd') || !have('ctr') ? 'containerd is not installed' : false);

// The host's facts the expectations depend on.
const ONLINE = fs.readFileSync('/sys/devices/system/cpu/online', 'utf8').trim();
const LAST_CPU = String(Math.max(...ONLINE.split(',').map((r) => Number(r.split('-').at(-1)))));
const MEMSW = fs.existsSync('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes');
const OWN_OOM = Number(fs.readFileSync('/proc/self/oom_score_adj', 'utf8'));

// What a container reads about itself (cgroup v1).
const PROBE = {
  memory: '/sys/fs/cgroup/memory/memory.limit_in_bytes',
  memsw: '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes',
  quota: '/sys/fs/cgroup/cpu/cpu.cfs_quota_us',
  period: '/sys/fs/cgroup/cpu/cpu.cfs_period_us',
  shares: '/sys/fs/cgroup/cpu/cpu.shares',
  cpus: '/sys/fs/cgroup/cpuset/cpuset.cpus',
  oom: '/proc/1/oom_score_adj', // the container's init
};

function runScript(args) {
  const r = spawnSync(CTRD, args, { env: { ...process.env, ...CTRD_ENV }, encoding: 'utf8', timeout: 180000 });
  if (r.status !== 0) throw new Error(`scripts/containerd ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

// One runtime behind the same small interface: sluiced or containerd.
class Runtime {
  constructor(name, rt, logRoot) {
    this.name = name;
    this.rt = rt;
    this.logRoot = logRoot;
    this.pods = [];
    this.n = 0;
  }

  async runPod(name, linux = {}) {
    const n = ++this.n;
    const logDir = path.join(this.logRoot, `${this.name}-${name}-${n}`);
    fs.mkdirSync(logDir, { recursive: true });
    const config = {
      metadata: { name, uid: `res-${process.pid}-${this.name}-${n}`, namespace: 'sluice-test', attempt: 0 },
      log_directory: logDir,
      linux: {
        ...linux,
        security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
      },
    };
    const { pod_sandbox_id: id } = await this.rt.RunPodSandbox({ config }, { deadlineMs: CALL_MS });
    this.pods.push(id);
    return { id, config };
  }

  async create(pod, name, command, resources) {
    const config = {
      metadata: { name, attempt: 0 }, image: { image: BUSYBOX_IMAGE }, command,
      log_path: `${name}.log`,
      // what the kubelet sends (so /proc/1 is the container's own init)
      linux: { resources, security_context: { namespace_options: { pid: 'CONTAINER' } } },
    };
    const r = await this.rt.CreateContainer({ pod_sandbox_id: pod.id, config, sandbox_config: pod.config },
      { deadlineMs: CALL_MS });
    return r.container_id;
  }

  async run(pod, name, resources, command = ['sleep', '100000']) {
    const id = await this.create(pod, name, command, resources);
    await this.rt.StartContainer({ container_id: id }, { deadlineMs: CALL_MS });
    return id;
  }

  // The PROBE values read by an exec in the container.
  async read(id) {
    const keys = Object.keys(PROBE);
    const r = await this.rt.ExecSync({ container_id: id, cmd: ['cat', ...keys.map((k) => PROBE[k])], timeout: 10 },
      { deadlineMs: CALL_MS });
    assert.equal(r.exit_code, 0, `${this.name}: cat failed: ${r.stderr}`);
    const lines = r.stdout.toString().trim().split('\n');
    return Object.fromEntries(keys.map((k, i) => [k, lines[i]]));
  }

  async status(id) {
    return (await this.rt.ContainerStatus({ container_id: id }, { deadlineMs: CALL_MS })).status;
  }

  async waitExited(id, ms = 60000) {
    const end = Date.now() + ms;
    for (;;) {
      const st = await this.status(id);
      if (st.state === 'CONTAINER_EXITED') return st;
      if (Date.now() > end) throw new Error(`${this.name}: ${id} not exited in ${ms} ms: ${st.state}`);
      await sleep(200);
    }
  }

  async removePods() {
    for (const id of this.pods) {
      await this.rt.StopPodSandbox({ pod_sandbox_id: id }, { deadlineMs: CALL_MS }).catch(() => {});
      await this.rt.RemovePodSandbox({ pod_sandbox_id: id }, { deadlineMs: CALL_MS }).catch(() => {});
    }
    this.pods = [];
  }
}

// The cgroup dirs left under CG_TOP (the kubelet's part in real life).
function removeParents() {
  for (const ctrl of fs.readdirSync('/sys/fs/cgroup')) {
    const top = path.join('/sys/fs/cgroup', ctrl, CG_TOP);
    if (!fs.existsSync(top)) continue;
    const rm = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true }))
        if (e.isDirectory()) rm(path.join(d, e.name));
      try {
        fs.rmdirSync(d);
      } catch {
        // busy: a container still in it
      }
    };
    rm(top);
  }
}

const BASE = {
  memory_limit_in_bytes: 64 * MIB, cpu_quota: 50000, cpu_period: 100000, cpu_shares: 512,
  cpuset_cpus: LAST_CPU, oom_score_adj: 500,
};
const BASE_READ = {
  memory: String(64 * MIB), quota: '50000', period: '100000', shares: '512', cpus: LAST_CPU,
  oom: String(Math.max(500, OWN_OOM)),
};
const UPDATE = { memory_limit_in_bytes: 128 * MIB, cpu_quota: 20000, cpu_shares: 1024, cpuset_cpus: '0' };
const UPDATE_READ = { memory: String(128 * MIB), quota: '20000', period: '100000', shares: '1024', cpus: '0' };

function pick(o, keys) {
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}

// The same steps for each runtime; returns what was read, for comparison.
async function scenario(r) {
  const seen = {};
  const pod = await r.runPod('res');
  const id = await r.run(pod, 'limits', BASE);
  seen.created = await r.read(id);
  assert.deepEqual(pick(seen.created, Object.keys(BASE_READ)), BASE_READ, `${r.name}: at create`);
  // swap: memsw follows the memory limit (no swap unless asked)
  if (MEMSW) assert.equal(seen.created.memsw, String(64 * MIB), `${r.name}: memsw`);
  seen.status = (await r.status(id)).resources.linux;

  await r.rt.UpdateContainerResources({ container_id: id, linux: UPDATE }, { deadlineMs: CALL_MS });
  seen.updated = await r.read(id);
  assert.deepEqual(pick(seen.updated, Object.keys(UPDATE_READ)), UPDATE_READ, `${r.name}: after update`);
  if (MEMSW) assert.equal(seen.updated.memsw, String(128 * MIB), `${r.name}: memsw after update`);
  seen.statusUpdated = (await r.status(id)).resources.linux;

  // an oom_score_adj below the daemon's own is raised to it
  const low = await r.run(pod, 'low', { oom_score_adj: -500 });
  seen.lowOom = (await r.read(low)).oom;

  // explicit swap
  if (MEMSW) {
    const sw = await r.run(pod, 'swap', { memory_limit_in_bytes: 64 * MIB, memory_swap_limit_in_bytes: 96 * MIB });
    seen.swap = pick(await r.read(sw), ['memory', 'memsw']);
  }

  // cgroup_parent: the kubelet's cgroupfs form
  const parent = `${CG_TOP}/${r.name}-${process.pid}/podres`;
  const pp = await r.runPod('parent', { cgroup_parent: parent });
  const inParent = await r.run(pp, 'inparent', { memory_limit_in_bytes: 64 * MIB });
  const cg = await r.rt.ExecSync({ container_id: inParent, cmd: ['cat', '/proc/self/cgroup'], timeout: 10 },
    { deadlineMs: CALL_MS });
  const memLine = cg.stdout.toString().split('\n').find((l) => /^\d+:memory:/.test(l));
  assert.equal(memLine?.replace(/^\d+:memory:/, ''), `${parent}/${inParent}`,
    `${r.name}: memory cgroup of a pod with cgroup_parent`);
  seen.parentLimit = (await r.read(inParent)).memory;
  assert.equal(seen.parentLimit, String(64 * MIB));
  return seen;
}

describe('container resources', { skip }, () => {
  let sd;
  let sluiced;
  let startError = null;
  let seenSluiced = null;
  const logRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'res-logs-'));

  before(async () => {
    sd = await SluicedInstance.start({ label: 'res' }).catch((e) => {
      startError = e;
      return null;
    });
    if (sd) sluiced = new Runtime('sluiced', sd.rt, logRoot);
  });

  after(async () => {
    await sd?.destroy(); // after stop(): nothing
    removeParents();
    fs.rmSync(logRoot, { recursive: true, force: true });
  }, { timeout: 120000 });

  test('limits at create, after UpdateContainerResources, in ContainerStatus, with cgroup_parent', { timeout: 180000 }, async () => {
    if (startError) throw startError;
    seenSluiced = await scenario(sluiced);
    // ContainerStatus.resources: the values in effect
    assert.deepEqual(pick(seenSluiced.status, ['memory_limit_in_bytes', 'cpu_quota', 'cpu_period', 'cpu_shares',
      'cpuset_cpus', 'oom_score_adj']), {
      memory_limit_in_bytes: String(64 * MIB), cpu_quota: '50000', cpu_period: '100000', cpu_shares: '512',
      cpuset_cpus: LAST_CPU, oom_score_adj: BASE_READ.oom,
    });
    assert.equal(seenSluiced.statusUpdated.memory_limit_in_bytes, String(128 * MIB));
    assert.equal(seenSluiced.statusUpdated.cpu_quota, '20000');
    assert.equal(seenSluiced.statusUpdated.cpu_period, '100000'); // kept
    assert.equal(seenSluiced.statusUpdated.cpu_shares, '1024');
    assert.equal(seenSluiced.statusUpdated.cpuset_cpus, '0');
    if (MEMSW) assert.equal(seenSluiced.statusUpdated.memory_swap_limit_in_bytes, String(128 * MIB));
    assert.equal(seenSluiced.lowOom, String(Math.max(-500, OWN_OOM)));
    if (MEMSW) assert.deepEqual(seenSluiced.swap, { memory: String(64 * MIB), memsw: String(96 * MIB) });
  });

  test('the record survives a restart of sluiced', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('restart');
    const id = await sluiced.run(pod, 'r', { memory_limit_in_bytes: 64 * MIB });
    await sluiced.rt.UpdateContainerResources({ container_id: id, linux: { cpu_quota: 30000 } });
    await sd.restart();
    sluiced.rt = sd.rt;
    const st = (await sluiced.status(id)).resources.linux;
    assert.equal(st.memory_limit_in_bytes, String(64 * MIB));
    assert.equal(st.cpu_quota, '30000');
    assert.equal((await sluiced.read(id)).quota, '30000');
  });

  test('update of a created container applies at start; update of an exited one is recorded', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('upd');
    const id = await sluiced.create(pod, 'later', ['sleep', '100000'], { memory_limit_in_bytes: 64 * MIB });
    await sluiced.rt.UpdateContainerResources({ container_id: id, linux: { memory_limit_in_bytes: 96 * MIB } });
    await sluiced.rt.StartContainer({ container_id: id });
    assert.equal((await sluiced.read(id)).memory, String(96 * MIB));
    const done = await sluiced.run(pod, 'done', { cpu_shares: 256 }, ['true']);
    await sluiced.waitExited(done);
    await sluiced.rt.UpdateContainerResources({ container_id: done, linux: { cpu_shares: 300 } });
    assert.equal((await sluiced.status(done)).resources.linux.cpu_shares, '300');
  });

  test('a new oom_score_adj reaches the running init process', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('oomadj');
    const id = await sluiced.run(pod, 'o', { oom_score_adj: 100 });
    assert.equal((await sluiced.read(id)).oom, String(Math.max(100, OWN_OOM)));
    await sluiced.rt.UpdateContainerResources({ container_id: id, linux: { oom_score_adj: 700 } });
    assert.equal((await sluiced.read(id)).oom, '700');
    assert.equal((await sluiced.status(id)).resources.linux.oom_score_adj, '700');
  });

  test('the OOM killer: EXITED, exit code 137, reason OOMKilled; a plain SIGKILL is not', { timeout: 120000 }, async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('oom');
    // dd allocates (and fills) one 200 MiB block: far over the 64 MiB limit
    const id = await sluiced.run(pod, 'hog', { memory_limit_in_bytes: 64 * MIB },
      ['sh', '-c', 'dd if=/dev/zero of=/dev/null bs=200M count=1']);
    const st = await sluiced.waitExited(id);
    assert.equal(st.exit_code, 137);
    assert.equal(st.reason, 'OOMKilled');
    // the same exit code from a kill is an "Error"
    const k = await sluiced.run(pod, 'killed', { memory_limit_in_bytes: 64 * MIB });
    await sluiced.rt.StopContainer({ container_id: k, timeout: 0 });
    const kst = await sluiced.waitExited(k);
    assert.equal(kst.exit_code, 137);
    assert.equal(kst.reason, 'Error');
  });

  test('a limit the kernel refuses: runc update\'s words, and the old limit stays', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('refuse');
    // 40 MiB in tmpfs stays charged to the container and cannot be reclaimed (memsw = the limit: no swap)
    const id = await sluiced.run(pod, 'full', { memory_limit_in_bytes: 64 * MIB },
      ['sh', '-c', 'head -c 41943040 /dev/zero > /dev/shm/fill && touch /dev/shm/done && exec sleep 100000']);
    for (let i = 0; i < 100; i++) {
      const r = await sluiced.rt.ExecSync({ container_id: id, cmd: ['test', '-e', '/dev/shm/done'], timeout: 5 });
      if (r.exit_code === 0) break;
      await sleep(100);
    }
    await assert.rejects(sluiced.rt.UpdateContainerResources({ container_id: id,
      linux: { memory_limit_in_bytes: 8 * MIB, memory_swap_limit_in_bytes: MEMSW ? 8 * MIB : 0 } }), (e) => {
      assert.equal(e.code, S.UNKNOWN, `${e.code} ${e.details}`);
      assert.match(e.details, /^failed to update container resources: runc update [0-9a-f]{64}: /);
      return true;
    });
    assert.equal((await sluiced.read(id)).memory, String(64 * MIB));
    assert.equal((await sluiced.status(id)).resources.linux.memory_limit_in_bytes, String(64 * MIB));
  });

  test('huge page limits as the kubelet sends them (0 for each size of the host)', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('huge');
    const sizes = fs.existsSync('/sys/kernel/mm/hugepages') ? fs.readdirSync('/sys/kernel/mm/hugepages') : [];
    const limits = sizes.map((d) => {
      const kb = Number(/^hugepages-(\d+)kB$/.exec(d)[1]);
      const name = kb % (1024 * 1024) === 0 ? `${kb / 1024 / 1024}GB` : kb % 1024 === 0 ? `${kb / 1024}MB` : `${kb}KB`;
      const pool = ['nr_hugepages', 'nr_overcommit_hugepages']
        .map((f) => Number(fs.readFileSync(`/sys/kernel/mm/hugepages/${d}/${f}`, 'utf8'))).reduce((a, b) => a + b);
      return { page_size: name, limit: 0, pool };
    });
    const hugetlb = fs.existsSync('/sys/fs/cgroup/hugetlb');
    const create = () => sluiced.run(pod, `h${Math.random().toString(16).slice(2, 8)}`,
      { hugepage_limits: limits.map(({ page_size, limit }) => ({ page_size, limit })) });
    if (hugetlb || limits.every((l) => l.pool === 0)) {
      const id = await create(); // applied (controller) or held (empty pool)
      assert.deepEqual((await sluiced.status(id)).resources.linux.hugepage_limits.map((h) => h.page_size),
        limits.map((l) => l.page_size));
    } else {
      await assert.rejects(create(), (e) => e.code === S.UNIMPLEMENTED && /hugepage_limits\[\d\]/.test(e.details));
    }
    await assert.rejects(sluiced.run(pod, 'h3', { hugepage_limits: [{ page_size: '3MB', limit: 0 }] }),
      (e) => e.code === S.INVALID_ARGUMENT &&
        /^linux\.resources\.hugepage_limits\[0\]\.page_size: "3MB": not a huge page size/.test(e.details));
  });

  test('bad values: INVALID_ARGUMENT or UNIMPLEMENTED naming the field; sluiced keeps serving', async () => {
    if (startError) throw startError;
    const pod = await sluiced.runPod('bad');
    const cases = [
      [{ cpu_quota: -5 }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_quota: -5: /],
      [{ cpu_quota: 10 }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_quota: 10: /],
      [{ cpu_period: 100 }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_period: 100: /],
      [{ cpu_period: 2000000 }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_period: 2000000: /],
      [{ cpu_shares: 1 }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_shares: 1: /],
      [{ memory_limit_in_bytes: 4096 }, S.INVALID_ARGUMENT, /^linux\.resources\.memory_limit_in_bytes: 4096: /],
      [{ memory_limit_in_bytes: -7 }, S.INVALID_ARGUMENT, /^linux\.resources\.memory_limit_in_bytes: -7: /],
      [{ cpuset_cpus: '0-4095' }, S.INVALID_ARGUMENT, /^linux\.resources\.cpuset_cpus: "0-4095": cpu \d+ is not online/],
      [{ cpuset_cpus: 'all' }, S.INVALID_ARGUMENT, /^linux\.resources\.cpuset_cpus: "all": /],
      [{ cpuset_mems: '7' }, S.INVALID_ARGUMENT, /^linux\.resources\.cpuset_mems: "7": memory node 7 is not online/],
      [{ oom_score_adj: 2000 }, S.INVALID_ARGUMENT, /^linux\.resources\.oom_score_adj: 2000: /],
      [{ unified: { 'memory.high': '1000000' } }, S.UNIMPLEMENTED, /^linux\.resources\.unified: needs the cgroup v2/],
      MEMSW
        ? [{ memory_limit_in_bytes: 64 * MIB, memory_swap_limit_in_bytes: 32 * MIB }, S.INVALID_ARGUMENT,
          /^linux\.resources\.memory_swap_limit_in_bytes: 33554432: below/]
        : [{ memory_limit_in_bytes: 64 * MIB, memory_swap_limit_in_bytes: 128 * MIB }, S.UNIMPLEMENTED,
          /^linux\.resources\.memory_swap_limit_in_bytes: 134217728: this host/],
    ];
    for (const [res, code, re] of cases) {
      await assert.rejects(sluiced.create(pod, 'bad', ['true'], res), (e) => {
        assert.equal(e.code, code, `${JSON.stringify(res)}: ${e.code} ${e.details}`);
        assert.match(e.details, re);
        return true;
      });
    }
    const podCases = [
      [{ cgroup_parent: 'kubepods/pod1' }, S.INVALID_ARGUMENT, /^linux\.cgroup_parent: "kubepods\/pod1" is relative/],
      [{ cgroup_parent: '/kubepods/../etc' }, S.INVALID_ARGUMENT, /^linux\.cgroup_parent: /],
      [{ cgroup_parent: 'kubepods-besteffort-pod1.slice' }, S.UNIMPLEMENTED, /^linux\.cgroup_parent: .*systemd slice/],
      [{ resources: { cpu_quota: -3 } }, S.INVALID_ARGUMENT, /^linux\.resources\.cpu_quota: -3: /],
      [{ overhead: { memory_limit_in_bytes: -9 } }, S.INVALID_ARGUMENT, /^linux\.overhead\.memory_limit_in_bytes: -9: /],
    ];
    for (const [linux, code, re] of podCases) {
      await assert.rejects(sluiced.runPod('badpod', linux), (e) => {
        assert.equal(e.code, code, `${JSON.stringify(linux)}: ${e.code} ${e.details}`);
        assert.match(e.details, re);
        return true;
      });
    }
    const id = await sluiced.run(pod, 'target', { memory_limit_in_bytes: 64 * MIB });
    const updates = [
      [{ linux: { cpu_quota: -5 } }, S.INVALID_ARGUMENT, /^linux\.cpu_quota: -5: /],
      [{ linux: { memory_limit_in_bytes: 64 * MIB, memory_swap_limit_in_bytes: -2 } }, S.INVALID_ARGUMENT,
        /^linux\.memory_swap_limit_in_bytes: -2: /],
      [{ linux: { cpuset_cpus: '0-4095' } }, S.INVALID_ARGUMENT, /^linux\.cpuset_cpus: /],
      [{ windows: { cpu_shares: 2 } }, S.UNIMPLEMENTED, /^windows: /],
      [{ linux: {}, annotations: { a: 'b' } }, S.UNIMPLEMENTED, /^annotations: /],
    ];
    for (const [req, code, re] of updates) {
      await assert.rejects(sluiced.rt.UpdateContainerResources({ container_id: id, ...req }), (e) => {
        assert.equal(e.code, code, `${JSON.stringify(req)}: ${e.code} ${e.details}`);
        assert.match(e.details, re);
        return true;
      });
    }
    await assert.rejects(sluiced.rt.UpdateContainerResources({ container_id: 'f'.repeat(64), linux: {} }),
      (e) => e.code === S.NOT_FOUND);
    assert.equal((await sluiced.read(id)).memory, String(64 * MIB)); // nothing of that applied
    sd.assertAlive();
    const v = await sd.rt.Version({});
    assert.equal(v.runtime_name, 'sluice');
  });

  test('a clean stop: the pod cgroups of sluiced are gone, a given cgroup_parent is left to its owner', { timeout: 120000 }, async () => {
    if (startError) throw startError;
    const { cgroups } = await sd.stop();
    assert.deepEqual(cgroups, []);
    const parent = path.join('/sys/fs/cgroup/memory', CG_TOP, `sluiced-${process.pid}`, 'podres');
    assert.ok(fs.existsSync(parent), `${parent} was removed: it is the kubelet's`);
    const kids = fs.readdirSync(parent, { withFileTypes: true }).filter((e) => e.isDirectory());
    assert.deepEqual(kids, [], 'runc removed the containers\' own cgroups');
  });

  describe('the same against containerd 1.6', { skip: ctrdSkip }, () => {
    let cri;
    let ctrd;
    let startedHere = false;

    before(async () => {
      if (spawnSync(CTRD, ['status'], { env: { ...process.env, ...CTRD_ENV } }).status !== 0) {
        runScript(['start']);
        startedHere = true;
      }
      const vars = Object.fromEntries(runScript(['env']).trim().split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      cri = await connectCri(vars.CONTAINERD_ENDPOINT);
      ctrd = new Runtime('containerd', cri.runtime, logRoot);
    }, { timeout: 180000 });

    after(async () => {
      if (ctrd) await ctrd.removePods();
      cri?.close();
      if (startedHere) runScript(['stop', '--purge']);
      removeParents();
    }, { timeout: 120000 });

    test('reads the same values inside, reports the same status, kills the same way', { timeout: 240000 }, async () => {
      assert.ok(seenSluiced, 'the sluiced scenario ran first');
      const seen = await scenario(ctrd);
      for (const k of ['created', 'updated']) assert.deepEqual(seen[k], seenSluiced[k], `${k}: containerd vs sluiced`);
      assert.equal(seen.lowOom, seenSluiced.lowOom, 'oom_score_adj below the daemon');
      assert.deepEqual(seen.swap, seenSluiced.swap, 'explicit swap');
      assert.equal(seen.parentLimit, seenSluiced.parentLimit);
      for (const k of ['memory_limit_in_bytes', 'memory_swap_limit_in_bytes', 'cpu_quota', 'cpu_period', 'cpu_shares',
        'cpuset_cpus', 'oom_score_adj'])
        assert.equal(seen.status[k], seenSluiced.status[k], `ContainerStatus.resources.${k} at create`);
      for (const k of ['memory_limit_in_bytes', 'memory_swap_limit_in_bytes', 'cpu_quota', 'cpu_period', 'cpu_shares',
        'cpuset_cpus'])
        assert.equal(seen.statusUpdated[k], seenSluiced.statusUpdated[k], `ContainerStatus.resources.${k} after update`);
      const pod = await ctrd.runPod('oom');
      const id = await ctrd.run(pod, 'hog', { memory_limit_in_bytes: 64 * MIB },
        ['sh', '-c', 'dd if=/dev/zero of=/dev/null bs=200M count=1']);
      const st = await ctrd.waitExited(id);
      assert.deepEqual([st.exit_code, st.reason], [137, 'OOMKilled']);
    });
  });
});
