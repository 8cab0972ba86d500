// CRI NamespaceOption (network, IPC, PID, user) as seen from inside the
// containers, on sluiced and, for every config it accepts, on the reference
// containerd 1.6 (a private instance), asserting that both agree:
//   PID POD: the pod's containers share one pid namespace whose pid 1 is the
//     runtime's holder (sluice-pause; containerd's pause), which reaps
//     orphans; PID CONTAINER: only the container's own processes; PID NODE:
//     the host's; TARGET: the target container's;
//   IPC POD: one IPC namespace per pod; NODE: the host's;
//   PodSandboxStatus reports the modes; bad modes are refused by name.
// Pods use the host network: the reference containerd has no CNI network.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as grpcStatus } from './lib/cri.mjs';
import { containerdSkipReason, PrivateContainerd } from './lib/ctrd_private.mjs';
import {
  BUSYBOX_IMAGE, destroyAll, pidAlive, SluicedInstance, skipReason, sleep,
} from './lib/sluiced.mjs';

const CONTAINERD_PORT = 10173;
const DEADLINE_MS = 30000;
// Every process of the container's pid namespace: "<pid> <cmdline>" lines.
const PS = 'for d in /proc/[0-9]*; do echo "${d#/proc/} $(tr "\\0" " " < $d/cmdline)"; done';
const ZOMBIES = 'for s in /proc/[0-9]*/stat; do cat $s; echo; done | awk \'$3 == "Z"\'';

// One runtime behind the CRI: sluiced or containerd.
class Side {
  constructor(name, rt, logRoot) {
    this.name = name;
    this.rt = rt;
    this.logRoot = logRoot;
    this.pods = [];
    this.n = 0;
  }

  podConfig(name, ns) {
    const n = ++this.n;
    return {
      metadata: { name, uid: `podns-${process.pid}-${this.name}-${n}`, namespace: 'sluice-test', attempt: 0 },
      log_directory: path.join(this.logRoot, `${this.name}-${name}-${n}`),
      linux: { security_context: { namespace_options: ns } },
    };
  }

  async pod(name, ns) {
    const config = this.podConfig(name, ns);
    const r = await this.rt.RunPodSandbox({ config }, { deadlineMs: DEADLINE_MS });
    this.pods.push(r.pod_sandbox_id);
    return { id: r.pod_sandbox_id, config };
  }

  async create(pod, name, command, ns) {
    const config = {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX_IMAGE },
      command,
      log_path: `${name}.log`,
      linux: { security_context: { namespace_options: ns } },
    };
    const r = await this.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config, sandbox_config: pod.config }, { deadlineMs: DEADLINE_MS });
    return r.container_id;
  }

  async run(pod, name, command, ns) {
    const id = await this.create(pod, name, command, ns);
    await this.rt.StartContainer({ container_id: id }, { deadlineMs: DEADLINE_MS });
    return id;
  }

  async sh(id, script) {
    const r = await this.rt.ExecSync({ container_id: id, cmd: ['sh', '-c', script], timeout: 20 },
      { deadlineMs: DEADLINE_MS });
    return { code: r.exit_code, out: r.stdout.toString(), err: r.stderr.toString() };
  }

  async out(id, script) {
    const r = await this.sh(id, script);
    assert.equal(r.code, 0, `${this.name}: ${script}: ${r.err}`);
    return r.out.trim();
  }

  // pid -> cmdline of every process the container sees.
  async procs(id) {
    const m = new Map();
    for (const line of (await this.out(id, PS)).split('\n')) {
      const sp = line.indexOf(' ');
      if (sp > 0) m.set(Number(line.slice(0, sp)), line.slice(sp + 1).trim());
    }
    return m;
  }

  async waitState(id, state, ms = 20000) {
    const end = Date.now() + ms;
    for (;;) {
      const st = (await this.rt.ContainerStatus({ container_id: id })).status;
      if (st.state === state) return st;
      if (Date.now() > end) throw new Error(`${this.name}: ${id} not ${state}: ${JSON.stringify(st)}`);
      await sleep(100);
    }
  }

  async removePods() {
    for (const id of this.pods.splice(0)) {
      await this.rt.StopPodSandbox({ pod_sandbox_id: id }, { deadlineMs: DEADLINE_MS }).catch(() => {});
      await this.rt.RemovePodSandbox({ pod_sandbox_id: id }, { deadlineMs: DEADLINE_MS }).catch(() => {});
    }
  }
}

const hostNs = (kind) => fs.readlinkSync(`/proc/self/ns/${kind}`);
const values = (m) => [...m.values()];

// The pod's monitor and its pid-namespace holder (children of the monitor).
function monitorOf(sd, podId) {
  return Number(fs.readFileSync(path.join(sd.runDir, 'pods', podId, 'mon.pid'), 'utf8'));
}
function holderOf(sd, podId) {
  const mon = monitorOf(sd, podId);
  const kids = fs.readFileSync(`/proc/${mon}/task/${mon}/children`, 'utf8').trim().split(/\s+/);
  return kids.map(Number).find((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sluice-pause';
    } catch {
      return false;
    }
  });
}

async function waitGone(pid, ms = 10000) {
  const end = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() > end) throw new Error(`pid ${pid} still alive after ${ms} ms`);
    await sleep(50);
  }
}

async function expectCode(promise, code, re) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `code ${err.code} (${err.details}), wanted ${code}`);
    if (re) assert.match(err.details, re);
    return true;
  });
}

const reason = skipReason();
const refReason = reason || containerdSkipReason();

describe('namespace options', { skip: reason }, () => {
  let sd, ref, sides, logRoot;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'podns' });
    logRoot = path.join(sd.root, 'logs');
    sides = [new Side('sluiced', sd.rt, logRoot)];
    if (!refReason) {
      ref = await PrivateContainerd.start('podns', CONTAINERD_PORT);
      sides.push(new Side('containerd', ref.cri.runtime, logRoot));
    }
  }, { timeout: 180000 });

  after(async () => {
    for (const s of sides || []) await s.removePods();
    await ref?.stop();
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 180000 });

  test('reference: containerd runs beside sluiced', { skip: refReason }, () => {
    assert.equal(sides.length, 2);
  });

  test('PID POD: every container of the pod sees the others; pid 1 is the holder', async () => {
    const ns = { network: 'NODE', pid: 'POD', ipc: 'POD' };
    const seen = {};
    for (const side of sides) {
      const pod = await side.pod('pidpod', ns);
      const a = await side.run(pod, 'a', ['sleep', '1001'], ns);
      const b = await side.run(pod, 'b', ['sleep', '1002'], ns);
      const inB = await side.procs(b);
      assert.ok(values(inB).includes('sleep 1001'), `${side.name}: b sees a: ${values(inB)}`);
      assert.ok(values(inB).includes('sleep 1002'), `${side.name}: b sees itself`);
      const one = inB.get(1);
      assert.ok(one && !one.startsWith('sleep'), `${side.name}: pid 1 is ${one}`);
      const nsA = await side.out(a, 'readlink /proc/self/ns/pid');
      assert.equal(await side.out(b, 'readlink /proc/self/ns/pid'), nsA);
      assert.notEqual(nsA, hostNs('pid'));
      seen[side.name] = one;
      await side.removePods();
    }
    assert.equal(seen.sluiced, 'sluice-pause');
    if (seen.containerd) assert.match(seen.containerd, /\/bin\/pause/);
  });

  test('PID POD is the default when neither pod nor container sets options', async () => {
    const side = sides[0];
    const pod = await side.pod('pidpod-default', { network: 'NODE' });
    const a = await side.run(pod, 'a', ['sleep', '1011'], undefined);
    const b = await side.run(pod, 'b', ['sleep', '1012'], undefined);
    const inB = await side.procs(b);
    assert.equal(inB.get(1), 'sluice-pause');
    assert.ok(values(inB).includes('sleep 1011'));
    await side.rt.StopContainer({ container_id: a, timeout: 0 });
    await side.removePods();
  });

  test('PID POD: the holder is pid 1 of the namespace and reaps orphans; no zombie stays', async () => {
    const side = sides[0];
    const ns = { network: 'NODE', pid: 'POD', ipc: 'POD' };
    const pod = await side.pod('reaper', ns);
    const a = await side.run(pod, 'a', ['sleep', '1021'], ns);
    const holder = holderOf(sd, pod.id);
    assert.ok(holder, 'a sluice-pause child of the monitor');
    const status = fs.readFileSync(`/proc/${holder}/status`, 'utf8');
    assert.match(status, new RegExp(`^NSpid:\\s+${holder}\\s+1$`, 'm'));
    assert.equal(fs.readlinkSync(`/proc/${holder}/ns/pid`), await side.out(a, 'readlink /proc/self/ns/pid'));
    // An orphan (its shell exits at once) is re-parented to pid 1...
    await side.out(a, 'sleep 1022 >/dev/null 2>&1 & exit 0');
    await sleep(200);
    const ppid = await side.out(a,
      'for d in /proc/[0-9]*; do if [ "$(tr "\\0" " " < $d/cmdline)" = "sleep 1022 " ]; then ' +
      'awk \'{print $4}\' $d/stat; fi; done');
    assert.equal(ppid, '1');
    // ...and reaped there when it ends.
    await side.out(a, '(sleep 0.2; exit 3) >/dev/null 2>&1 & exit 0');
    await sleep(1000);
    assert.equal(await side.out(a, ZOMBIES), '', 'zombies in the pod');
    await side.removePods();
    await waitGone(holder);
  });

  test('PID POD: a container\'s other processes end with its init (both runtimes)', async () => {
    const ns = { network: 'NODE', pid: 'POD', ipc: 'POD' };
    for (const side of sides) {
      const pod = await side.pod('killall', ns);
      const watcher = await side.run(pod, 'w', ['sleep', '1031'], ns);
      const c = await side.run(pod, 'c', ['sh', '-c', 'sleep 1032 & exec sleep 1033'], ns);
      assert.ok(values(await side.procs(watcher)).includes('sleep 1032'));
      await side.rt.StopContainer({ container_id: c, timeout: 0 }, { deadlineMs: DEADLINE_MS });
      const st = await side.waitState(c, 'CONTAINER_EXITED');
      assert.equal(st.exit_code, 137, side.name);
      const end = Date.now() + 5000;
      while (values(await side.procs(watcher)).includes('sleep 1032') && Date.now() < end)
        await sleep(100);
      assert.ok(!values(await side.procs(watcher)).includes('sleep 1032'),
        `${side.name}: the background sleep outlived its container`);
      await side.removePods();
    }
  });

  test('PID CONTAINER: only the container\'s own processes', async () => {
    const ns = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };
    for (const side of sides) {
      const pod = await side.pod('pidctr', ns);
      const a = await side.run(pod, 'a', ['sleep', '1041'], ns);
      const b = await side.run(pod, 'b', ['sleep', '1042'], ns);
      const inB = await side.procs(b);
      assert.equal(inB.get(1), 'sleep 1042', `${side.name}: ${[...inB]}`);
      assert.ok(!values(inB).includes('sleep 1041'), side.name);
      assert.notEqual(await side.out(a, 'readlink /proc/self/ns/pid'),
        await side.out(b, 'readlink /proc/self/ns/pid'));
      await side.removePods();
    }
  });

  test('PID NODE: the host\'s processes', async () => {
    const ns = { network: 'NODE', pid: 'NODE', ipc: 'POD' };
    for (const side of sides) {
      const pod = await side.pod('pidnode', ns);
      const a = await side.run(pod, 'a', ['sleep', '1051'], ns);
      assert.equal(await side.out(a, 'readlink /proc/self/ns/pid'), hostNs('pid'), side.name);
      const me = await side.out(a, `tr "\\0" " " < /proc/${process.pid}/cmdline`);
      assert.match(me, /node/, `${side.name} sees this test runner (pid ${process.pid})`);
      await side.removePods();
    }
  });

  test('PID TARGET: the target container\'s pid namespace', async () => {
    const podNs = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };
    for (const side of sides) {
      const pod = await side.pod('target', podNs);
      const a = await side.run(pod, 'a', ['sleep', '1061'], podNs);
      const b = await side.run(pod, 'b', ['sleep', '1062'],
        { network: 'NODE', pid: 'TARGET', ipc: 'POD', target_id: a });
      const inB = await side.procs(b);
      assert.equal(inB.get(1), 'sleep 1061', `${side.name}: ${[...inB]}`);
      assert.ok(values(inB).includes('sleep 1062'), side.name);
      assert.equal(await side.out(b, 'readlink /proc/self/ns/pid'),
        await side.out(a, 'readlink /proc/self/ns/pid'));
      await side.removePods();
    }
  });

  test('IPC POD: one namespace for the pod, not the host\'s; NODE: the host\'s', async () => {
    for (const side of sides) {
      const shared = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };
      let pod = await side.pod('ipcpod', shared);
      const a = await side.run(pod, 'a', ['sleep', '1071'], shared);
      const b = await side.run(pod, 'b', ['sleep', '1072'], shared);
      const ipcA = await side.out(a, 'readlink /proc/self/ns/ipc');
      assert.equal(await side.out(b, 'readlink /proc/self/ns/ipc'), ipcA, side.name);
      assert.notEqual(ipcA, hostNs('ipc'), side.name);
      const host = { network: 'NODE', pid: 'CONTAINER', ipc: 'NODE' };
      pod = await side.pod('ipcnode', host);
      const c = await side.run(pod, 'c', ['sleep', '1073'], host);
      assert.equal(await side.out(c, 'readlink /proc/self/ns/ipc'), hostNs('ipc'), side.name);
      await side.removePods();
    }
  });

  test('PodSandboxStatus reports the modes the pod was created with', async () => {
    const cases = [
      { network: 'NODE', pid: 'POD', ipc: 'POD' },
      { network: 'NODE', pid: 'CONTAINER', ipc: 'NODE' },
      { network: 'NODE', pid: 'NODE', ipc: 'POD' },
    ];
    for (const side of sides) {
      for (const ns of cases) {
        const pod = await side.pod('status', ns);
        const st = (await side.rt.PodSandboxStatus({ pod_sandbox_id: pod.id })).status;
        const o = st.linux.namespaces.options;
        assert.deepEqual({ network: o.network, pid: o.pid, ipc: o.ipc }, ns, side.name);
      }
      await side.removePods();
    }
  });

  // POD (a user namespace of the pod's own): interop/userns.
  test('user namespaces: NODE runs; CONTAINER, TARGET and what POD cannot honour are refused', async () => {
    const side = sides[0];
    const node = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD', userns_options: { mode: 'NODE' } };
    const pod = await side.pod('userns-node', node);
    const a = await side.run(pod, 'a', ['sleep', '1081'], node);
    assert.equal(await side.out(a, 'readlink /proc/self/ns/user'), hostNs('user'));
    const one = [{ host_id: 1000000, container_id: 0, length: 65536 }];
    await expectCode(side.pod('userns-pod', { ...node, userns_options: { mode: 'POD', uids: one, gids: one } }),
      grpcStatus.INVALID_ARGUMENT, /user namespace \(userns_options POD\) cannot use the host's network/);
    for (const mode of ['CONTAINER', 'TARGET'])
      await expectCode(side.pod('userns-bad', { ...node, userns_options: { mode } }),
        grpcStatus.INVALID_ARGUMENT, new RegExp(`userns_options\\.mode: ${mode}`));
    const mapping = [{ host_id: 1000, container_id: 0, length: 100 }];
    await expectCode(side.pod('userns-map', { ...node, userns_options: { mode: 'NODE', uids: mapping } }),
      grpcStatus.INVALID_ARGUMENT, /userns_options: uids\/gids mappings need mode POD/);
    const own = { ...node, userns_options: { mode: 'POD', uids: one, gids: one } };
    await expectCode(side.create(pod, 'b', ['true'], own),
      grpcStatus.INVALID_ARGUMENT, /userns_options: POD, but the pod sandbox uses the host's user namespace/);
    await side.removePods();
  });

  test('bad modes are INVALID_ARGUMENT naming the field; sluiced keeps serving', async () => {
    const side = sides[0];
    const ok = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };
    const NS = 'linux\\.security_context\\.namespace_options';
    for (const [bad, re] of [
      [{ ...ok, ipc: 'CONTAINER' }, `${NS}\\.ipc: CONTAINER`],
      [{ ...ok, ipc: 'TARGET' }, `${NS}\\.ipc: TARGET`],
      [{ ...ok, network: 'CONTAINER' }, `${NS}\\.network: CONTAINER`],
      [{ ...ok, pid: 'TARGET' }, `${NS}\\.pid: TARGET .*pod sandbox`],
      [{ ...ok, target_id: 'x' }, `${NS}\\.target_id`],
    ])
      await expectCode(side.pod('bad', bad), grpcStatus.INVALID_ARGUMENT, new RegExp(re));
    const pod = await side.pod('badctr', ok);
    const other = await side.pod('other', ok);
    const created = await side.create(pod, 'created', ['sleep', '1091'], ok);
    const elsewhere = await side.run(other, 'elsewhere', ['sleep', '1092'], ok);
    const cases = [
      [{ ...ok, ipc: 'CONTAINER' }, grpcStatus.INVALID_ARGUMENT, `${NS}\\.ipc: CONTAINER`],
      [{ ...ok, network: 'TARGET' }, grpcStatus.INVALID_ARGUMENT, `${NS}\\.network: TARGET`],
      [{ ...ok, pid: 'TARGET' }, grpcStatus.INVALID_ARGUMENT, `${NS}\\.target_id: pid mode TARGET needs`],
      [{ ...ok, target_id: created }, grpcStatus.INVALID_ARGUMENT, `${NS}\\.target_id: set, but pid is CONTAINER`],
      [{ ...ok, pid: 'TARGET', target_id: 'nope' }, grpcStatus.NOT_FOUND, `${NS}\\.target_id: container "nope" not found`],
      [{ ...ok, pid: 'TARGET', target_id: created }, grpcStatus.FAILED_PRECONDITION, 'is not running'],
      [{ ...ok, pid: 'TARGET', target_id: elsewhere }, grpcStatus.INVALID_ARGUMENT, 'belongs to pod sandbox'],
    ];
    for (const [bad, code, re] of cases)
      await expectCode(side.create(pod, 'bad', ['true'], bad), code, new RegExp(re));
    const v = await sd.rt.Version({ version: '' });
    assert.equal(v.runtime_name, 'sluice');
    await side.removePods();
  });

  test('a killed monitor: the holder and the pod\'s processes live on (the reaper keeps its lifeline); RemovePodSandbox still cleans up', async () => {
    const side = sides[0];
    const ns = { network: 'NODE', pid: 'POD', ipc: 'POD' };
    const pod = await side.pod('holder', ns);
    const a = await side.run(pod, 'a', ['sh', '-c', "trap 'exit 7' TERM; while :; do sleep 0.05; done"], ns);
    const { info } = await sd.rt.ContainerStatus({ container_id: a, verbose: true });
    const { pid } = JSON.parse(info.info);
    assert.ok(pid > 0 && pidAlive(pid));
    const holder = holderOf(sd, pod.id);
    process.kill(monitorOf(sd, pod.id), 'SIGKILL');
    await sleep(1000); // the holder used to end at once
    assert.ok(pidAlive(holder), 'the pid namespace holder lives on');
    assert.ok(pidAlive(pid), 'the container in its namespace lives on');
    assert.equal((await sd.rt.ContainerStatus({ container_id: a })).status.state, 'CONTAINER_RUNNING');
    process.kill(pid, 'SIGTERM');
    const st = await side.waitState(a, 'CONTAINER_EXITED');
    assert.equal(st.exit_code, 7, 'the exit code the reaper recorded');
    // a new monitor adopted the pod (mon_adopt.test.mjs) and keeps the holder
    assert.ok(pidAlive(holder), 'the holder lives on with the adopted pod');
    await side.removePods(); // the holder and the pinned namespace file go with the pod
    await waitGone(holder);
    assert.ok(!fs.existsSync(path.join(sd.runDir, 'pods', pod.id)));
  });

  test('a killed holder: the pod\'s containers are killed and no new one can join', async () => {
    const side = sides[0];
    const ns = { network: 'NODE', pid: 'POD', ipc: 'POD' };
    const pod = await side.pod('holder-killed', ns);
    const a = await side.run(pod, 'a', ['sleep', '1111'], ns);
    const holder = holderOf(sd, pod.id);
    process.kill(holder, 'SIGKILL');
    const st = await side.waitState(a, 'CONTAINER_EXITED');
    assert.equal(st.exit_code, 137);
    await expectCode(side.create(pod, 'late', ['true'], ns), grpcStatus.UNKNOWN,
      /pid namespace is gone: its holder \(sluice-pause\) exited/);
    await side.removePods();
  });
});
