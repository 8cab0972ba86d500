// The CRI stats and runtime-info calls of sluiced, as a kubelet makes
// them (grpc-js, lib/cri.mjs): ContainerStats, ListContainerStats,
// PodSandboxStats, ListPodSandboxStats against the kernel's own files read
// at the same time (cgroup files of the container's cgroup, named by the
// linux.cgroupsPath of its config.json; /proc/<pid>/net/dev of a process
// in the pod; du of the writable layer), for containers running a known
// memory load (64 MiB in /dev/shm) and CPU load (a busy loop); then
// RuntimeConfig, UpdateRuntimeConfig, Status verbose, CheckpointContainer,
// the CRI metrics calls and ImageFsInfo. The last part runs the same
// containers on the reference containerd 1.6 and compares.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connectCri, status as S, u64 } from './lib/cri.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BRIDGE = 'slstat0';
const SUBNET = '10.89.141.0/24';
const FS_REFRESH_MS = 300; // --stats-fs-refresh-ms: the writable-layer test waits for a walk
const CPU_WINDOW_MS = 1000; // the default shortest window of usage_nano_cores
const MIB = 1024n * 1024n;
const SHM_MIB = 64n;
const SLACK = 512n * 1024n; // a quiet cgroup's memory moves by a few pages between reads
const CG = '/sys/fs/cgroup';
const V2 = fs.existsSync(`${CG}/cgroup.controllers`);
const UDP_PACKETS = 300;
const UDP_BYTES = 1000;
const NS = 1000000000n;

// ---- the kernel's view ------------------------------------------------------

function cgPath(cg, ctrl, file) {
  return V2 ? path.join(CG, cg, file) : path.join(CG, ctrl, cg, file);
}

function readBig(p) {
  return BigInt(fs.readFileSync(p, 'utf8').trim());
}

function keyed(text, key) {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? BigInt(m[1]) : null;
}

// A cgroup's figures as the files hold them now.
function cgNow(cg) {
  const stat = fs.readFileSync(cgPath(cg, 'memory', 'memory.stat'), 'utf8');
  if (V2) {
    const cpu = fs.readFileSync(cgPath(cg, 'cpu', 'cpu.stat'), 'utf8');
    return {
      cpu: keyed(cpu, 'usage_usec') * 1000n,
      usage: readBig(cgPath(cg, 'memory', 'memory.current')),
      inactive: keyed(stat, 'inactive_file'),
      rss: keyed(stat, 'anon'),
      pgfault: keyed(stat, 'pgfault'),
      pgmajfault: keyed(stat, 'pgmajfault'),
    };
  }
  return {
    cpu: readBig(cgPath(cg, 'cpuacct', 'cpuacct.usage')),
    usage: readBig(cgPath(cg, 'memory', 'memory.usage_in_bytes')),
    inactive: keyed(stat, 'total_inactive_file'),
    rss: keyed(stat, 'total_rss'),
    pgfault: keyed(stat, 'total_pgfault'),
    pgmajfault: keyed(stat, 'total_pgmajfault'),
  };
}

// Processes in a cgroup and its descendants (cgroup.procs lines).
function procsUnder(dir) {
  let n = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).length;
  for (const e of fs.readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) n += procsUnder(path.join(dir, e.name));
  return n;
}

// /proc/<pid>/net/dev: the table of the network namespace pid is in.
function netDev(pid) {
  const out = {};
  for (const line of fs.readFileSync(`/proc/${pid}/net/dev`, 'utf8').split('\n').slice(2)) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const f = m[2].trim().split(/\s+/).map(BigInt);
    out[m[1]] = { rx: f[0], rxErr: f[2], tx: f[8], txErr: f[10] };
  }
  return out;
}

function du(dir, opt) {
  const r = spawnSync('du', ['-s', opt, dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return BigInt(r.stdout.split(/\s/)[0]);
}

function between(what, lo, v, hi) {
  assert.ok(v !== null && lo <= v && v <= hi, `${what}: ${v} not in [${lo}, ${hi}]`);
}

function near(what, v, want, slack) {
  between(what, want - slack, v, want + slack);
}

const nowNs = () => BigInt(Date.now()) * 1000000n;

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

// Idle CPU time of the machine so far (idle + iowait of every CPU, in ns).
function idleCpuNs() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return BigInt(Math.round(((f[4] + f[5]) / CLK_TCK) * 1e9));
}

// ---- the test ---------------------------------------------------------------------

describe('CRI stats and runtime info on sluiced', { skip: skipReason({ cni: true }) }, () => {
  let sd, pod, hostPod, mem, busy, idle, memCg, busyCg;

  const ctrCgroup = (id) =>
    JSON.parse(fs.readFileSync(path.join(sd.stateDir, 'containers', id, 'config.json'), 'utf8'))
      .linux.cgroupsPath;
  const upperOf = (id) => path.join(sd.stateDir, 'containers', id, 'upper');
  const cstats = async (id) => (await sd.rt.ContainerStats({ container_id: id })).stats;
  const pstats = async (id) => (await sd.rt.PodSandboxStats({ pod_sandbox_id: id })).stats;
  const pidOf = async (id) =>
    JSON.parse((await sd.rt.ContainerStatus({ container_id: id, verbose: true })).info.info).pid;

  before(async () => {
    sd = await SluicedInstance.start({
      label: 'stats', cni: { bridge: BRIDGE, subnet: SUBNET },
      args: ['--stats-fs-refresh-ms', String(FS_REFRESH_MS)],
    });
    pod = await sd.runPod('stats', { labels: { app: 'stats', tier: 'a' } });
    hostPod = await sd.runPod('hoststats', { hostNetwork: true, labels: { app: 'other' } });
    mem = await sd.runContainer(pod, 'mem', {
      labels: { role: 'mem' },
      command: ['sh', '-c', `dd if=/dev/zero of=/dev/shm/fill bs=1M count=${SHM_MIB} && exec sleep 3600`],
    });
    busy = await sd.runContainer(pod, 'busy', {
      labels: { role: 'busy' }, command: ['sh', '-c', 'while :; do :; done'],
    });
    idle = await sd.runContainer(hostPod, 'idle', { labels: { role: 'idle' }, command: ['sleep', '3600'] });
    memCg = ctrCgroup(mem);
    busyCg = ctrCgroup(busy);
    const end = Date.now() + 20000;
    while (cgNow(memCg).usage < SHM_MIB * MIB) {
      assert.ok(Date.now() < end, `the mem container never filled ${SHM_MIB} MiB`);
      await sleep(100);
    }
  }, { timeout: 90000 });

  after(async () => {
    if (sd) await sd.stop();
  }, { timeout: 60000 });

  test('ContainerStats memory: the cgroup files read around the call, and the view from inside', async () => {
    const t0 = nowNs();
    const a = cgNow(memCg);
    const st = await cstats(mem);
    const b = cgNow(memCg);
    const t1 = nowNs();
    assert.equal(st.attributes.id, mem);
    assert.equal(st.attributes.metadata.name, 'mem');
    assert.equal(st.attributes.labels.role, 'mem');
    const m = st.memory;
    between('memory.timestamp', t0, BigInt(m.timestamp), t1);
    const lo = (k) => (a[k] < b[k] ? a[k] : b[k]);
    const hi = (k) => (a[k] > b[k] ? a[k] : b[k]);
    between('usage_bytes', lo('usage') - SLACK, u64(m.usage_bytes), hi('usage') + SLACK);
    near('working_set_bytes', u64(m.working_set_bytes), a.usage - a.inactive, SLACK);
    between('rss_bytes', lo('rss') - SLACK, u64(m.rss_bytes), hi('rss') + SLACK);
    between('page_faults', a.pgfault, u64(m.page_faults), b.pgfault);
    between('major_page_faults', a.pgmajfault, u64(m.major_page_faults), b.pgmajfault);
    // /dev/shm pages are shared memory: in usage and in the working set
    assert.ok(u64(m.working_set_bytes) >= SHM_MIB * MIB, `working set ${u64(m.working_set_bytes)}`);
    assert.equal(m.available_bytes, null, 'no memory limit: available_bytes stays unset');
    // the container sees its own cgroup at /sys/fs/cgroup (the exec joins it
    // for a moment, so allow a little more)
    const file = V2 ? '/sys/fs/cgroup/memory.current' : '/sys/fs/cgroup/memory/memory.usage_in_bytes';
    const inside = await sd.execSync(mem, ['cat', file]);
    assert.equal(inside.exit_code, 0, inside.stderr.toString());
    near('usage seen inside', BigInt(inside.stdout.toString().trim()), u64(m.usage_bytes), 4n * MIB);
    console.log(`mem container: usage ${u64(m.usage_bytes)} ws ${u64(m.working_set_bytes)} ` +
      `rss ${u64(m.rss_bytes)} (files: ${a.usage}..${b.usage}); inside ${inside.stdout.toString().trim()}`);
  });

  test('ContainerStats CPU: cumulative time between the cgroup reads; nano-cores of a busy loop', async () => {
    const s0 = (await cstats(busy)).cpu;
    assert.equal(s0.usage_nano_cores, null, 'a first sample has no rate yet');
    const ta = nowNs();
    const a = cgNow(busyCg).cpu;
    const idleA = idleCpuNs();
    await sleep(CPU_WINDOW_MS + 200);
    const idleB = idleCpuNs();
    const b = cgNow(busyCg).cpu;
    const tb = nowNs();
    const s1 = (await cstats(busy)).cpu;
    between('usage_core_nano_seconds', u64(s0.usage_core_nano_seconds), a, b);
    between('usage_core_nano_seconds', b, u64(s1.usage_core_nano_seconds), b + NS);
    const rate = Number(u64(s1.usage_nano_cores));
    const own = Number((u64(s1.usage_core_nano_seconds) - u64(s0.usage_core_nano_seconds)) * NS) /
      Number(BigInt(s1.timestamp) - BigInt(s0.timestamp));
    const kernel = Number((b - a) * NS) / Number(tb - ta);
    console.log(`busy loop: usage_nano_cores ${rate}, from the two samples ${own.toFixed(0)}, ` +
      `cpuacct over ${(Number(tb - ta) / 1e9).toFixed(2)} s ${kernel.toFixed(0)}`);
    assert.ok(Math.abs(rate - own) <= own * 0.03, `rate ${rate} vs samples ${own}`);
    assert.ok(Math.abs(rate - kernel) <= kernel * 0.25, `rate ${rate} vs cgroup ${kernel}`);
    // One thread: at most one core. The machine is shared, so the loop gets a
    // whole core only when one is free: a CPU idles only while the loop runs
    // elsewhere, so idle CPU time <= (CPUs - 1) x the loop's (on an idle
    // 2-CPU machine: about 1e9 nano-cores, and one core idle).
    const idle = (Number(idleB - idleA) / Number(tb - ta)) * 1e9;
    const ncpu = os.cpus().length;
    console.log(`  idle CPU meanwhile ${idle.toFixed(0)} nano-cores of ${ncpu} CPUs`);
    assert.ok(rate > 0 && rate <= 1.05e9, `rate ${rate}`);
    if (ncpu > 1)
      assert.ok(rate >= (0.8 * idle) / (ncpu - 1) - 0.05e9,
        `a busy loop at ${rate} nano-cores while ${idle.toFixed(0)} stayed idle`);
    // a call right after reuses the last full window
    const s2 = (await cstats(busy)).cpu;
    assert.equal(Number(u64(s2.usage_nano_cores)), rate);
  });

  test('writable layer: grows by what is written into the rootfs; equals du of the upper dir', async () => {
    const w0 = (await cstats(mem)).writable_layer;
    assert.equal(w0.fs_id.mountpoint, path.join(sd.stateDir, 'containers'));
    const r = await sd.execSync(mem, ['sh', '-c',
      'dd if=/dev/zero of=/big bs=1M count=8 2>/dev/null && mkdir -p /d/e && touch /d/a /d/e/b']);
    assert.equal(r.exit_code, 0, r.stderr.toString());
    const upper = upperOf(mem);
    const end = Date.now() + 10000;
    let w;
    for (;;) {
      w = (await cstats(mem)).writable_layer;
      if (u64(w.used_bytes) === du(upper, '-B1') && u64(w.inodes_used) === du(upper, '--inodes')) break;
      assert.ok(Date.now() < end, `writable layer ${u64(w.used_bytes)} B ${u64(w.inodes_used)} inodes, ` +
        `du ${du(upper, '-B1')} B ${du(upper, '--inodes')} inodes`);
      await sleep(FS_REFRESH_MS / 2);
    }
    assert.ok(u64(w.used_bytes) >= u64(w0.used_bytes) + 8n * MIB, `${u64(w0.used_bytes)} -> ${u64(w.used_bytes)}`);
    assert.ok(u64(w.inodes_used) >= u64(w0.inodes_used) + 5n, `${u64(w0.inodes_used)} -> ${u64(w.inodes_used)}`);
    assert.ok(BigInt(w.timestamp) > BigInt(w0.timestamp));
    console.log(`writable layer: ${u64(w0.used_bytes)} B/${u64(w0.inodes_used)} -> ` +
      `${u64(w.used_bytes)} B/${u64(w.inodes_used)} inodes (du agrees)`);
  });

  test('PodSandboxStats: network counters grow with traffic, processes, pod cgroup, containers', async () => {
    const st = await sd.rt.PodSandboxStatus({ pod_sandbox_id: pod.id });
    const ip = st.status.network.ip;
    const pid = await pidOf(mem);
    const s0 = await pstats(pod.id);
    const eth0 = (s) => s.linux.network.default_interface;
    assert.equal(eth0(s0).name, 'eth0');
    const sock = dgram.createSocket('udp4');
    for (let i = 0; i < UDP_PACKETS; i++)
      await new Promise((resolve, reject) =>
        sock.send(Buffer.alloc(UDP_BYTES, 0x61), 9, ip, (err) => (err ? reject(err) : resolve())));
    sock.close();
    await sleep(200);
    const podCg = path.dirname(memCg);
    const a = netDev(pid);
    const cpuA = cgNow(podCg).cpu;
    const s1 = await pstats(pod.id);
    const cpuB = cgNow(podCg).cpu;
    const b = netDev(pid);
    const n1 = s1.linux.network;
    between('eth0 rx_bytes', a.eth0.rx, u64(n1.default_interface.rx_bytes), b.eth0.rx);
    between('eth0 tx_bytes', a.eth0.tx, u64(n1.default_interface.tx_bytes), b.eth0.tx);
    between('eth0 rx_errors', a.eth0.rxErr, u64(n1.default_interface.rx_errors), b.eth0.rxErr);
    assert.ok(u64(eth0(s1).rx_bytes) - u64(eth0(s0).rx_bytes) >= BigInt(UDP_PACKETS * UDP_BYTES),
      `rx ${u64(eth0(s0).rx_bytes)} -> ${u64(eth0(s1).rx_bytes)}`);
    assert.ok(u64(eth0(s1).tx_bytes) > u64(eth0(s0).tx_bytes), 'port unreachable answers went out');
    const others = Object.keys(a).filter((n) => n !== 'eth0' && n !== 'lo').sort();
    assert.deepEqual(n1.interfaces.map((i) => i.name).sort(), others, 'every other interface but lo');
    // processes: sleep (mem) and the busy shell
    const pidsDir = V2 ? path.join(CG, podCg) : path.join(CG, 'pids', podCg);
    assert.equal(Number(u64(s1.linux.process.process_count)), procsUnder(pidsDir));
    assert.equal(Number(u64(s1.linux.process.process_count)), 2);
    between('pod usage_core_nano_seconds', cpuA, u64(s1.linux.cpu.usage_core_nano_seconds), cpuB);
    const ctrs = s1.linux.containers;
    assert.deepEqual(ctrs.map((c) => c.attributes.id).sort(), [mem, busy].sort());
    const sum = ctrs.reduce((acc, c) => acc + u64(c.memory.usage_bytes), 0n);
    assert.ok(u64(s1.linux.memory.usage_bytes) >= sum - SLACK, 'the pod cgroup holds its containers');
    assert.equal(s1.attributes.metadata.name, 'stats');
    assert.equal(s1.attributes.labels.app, 'stats');
    console.log(`pod: eth0 rx ${u64(eth0(s0).rx_bytes)} -> ${u64(eth0(s1).rx_bytes)} ` +
      `(/proc/${pid}/net/dev ${a.eth0.rx}..${b.eth0.rx}), processes ` +
      `${u64(s1.linux.process.process_count)}, cpu ${u64(s1.linux.cpu.usage_core_nano_seconds)}`);
    // a host-network pod has no network of its own to report
    const h = await pstats(hostPod.id);
    assert.equal(h.linux.network, null);
    assert.equal(h.linux.containers.length, 1);
    assert.equal(Number(u64(h.linux.process.process_count)), 1);
  });

  test('ListContainerStats and ListPodSandboxStats filters', async () => {
    const ids = async (filter) =>
      (await sd.rt.ListContainerStats({ filter })).stats.map((s) => s.attributes.id).sort();
    assert.deepEqual(await ids(null), [mem, busy, idle].sort());
    assert.deepEqual(await ids({ id: mem }), [mem]);
    assert.deepEqual(await ids({ id: mem.slice(0, 12) }), [mem]); // crictl's prefixes
    assert.deepEqual(await ids({ pod_sandbox_id: pod.id }), [mem, busy].sort());
    assert.deepEqual(await ids({ pod_sandbox_id: hostPod.id }), [idle]);
    assert.deepEqual(await ids({ label_selector: { role: 'busy' } }), [busy]);
    assert.deepEqual(await ids({ label_selector: { role: 'none' } }), []);
    assert.deepEqual(await ids({ pod_sandbox_id: hostPod.id, label_selector: { role: 'mem' } }), []);
    assert.deepEqual(await ids({ id: 'f'.repeat(64) }), []);
    const pods = async (filter) =>
      (await sd.rt.ListPodSandboxStats({ filter })).stats.map((s) => s.attributes.id).sort();
    assert.deepEqual(await pods(null), [pod.id, hostPod.id].sort());
    assert.deepEqual(await pods({ id: pod.id }), [pod.id]);
    assert.deepEqual(await pods({ id: hostPod.id.slice(0, 10) }), [hostPod.id]);
    assert.deepEqual(await pods({ label_selector: { app: 'stats', tier: 'a' } }), [pod.id]);
    assert.deepEqual(await pods({ label_selector: { app: 'stats', tier: 'b' } }), []);
    await assert.rejects(sd.rt.ContainerStats({ container_id: 'nope' }), (e) => e.code === S.NOT_FOUND);
    await assert.rejects(sd.rt.PodSandboxStats({ pod_sandbox_id: 'nope' }), (e) => e.code === S.NOT_FOUND);
  });

  test('an exited container: attributes and writable layer, no CPU or memory; a stopped pod is not listed', async () => {
    const p = await sd.runPod('gone', { hostNetwork: true });
    const c = await sd.runContainer(p, 'once', { command: ['sh', '-c', 'echo x > /x'] });
    await sd.waitState(c, 'CONTAINER_EXITED');
    const st = await cstats(c);
    assert.equal(st.attributes.metadata.name, 'once');
    assert.equal(st.cpu, null);
    assert.equal(st.memory, null);
    assert.ok(u64(st.writable_layer.inodes_used) >= 2n, 'upper dir and /x');
    await sd.rt.StopPodSandbox({ pod_sandbox_id: p.id });
    const listed = (await sd.rt.ListPodSandboxStats({})).stats.map((s) => s.attributes.id);
    assert.ok(!listed.includes(p.id));
    await assert.rejects(sd.rt.PodSandboxStats({ pod_sandbox_id: p.id }),
      (e) => e.code === S.FAILED_PRECONDITION && /not ready/.test(e.details));
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: p.id });
    await assert.rejects(cstats(c), (e) => e.code === S.NOT_FOUND);
  });

  test('RuntimeConfig: cgroupfs; CheckpointContainer: UNIMPLEMENTED, saying why', async () => {
    const rc = await sd.rt.RuntimeConfig({});
    assert.equal(rc.linux.cgroup_driver, 'CGROUPFS');
    await assert.rejects(sd.rt.CheckpointContainer({ container_id: idle, location: '/tmp/x.tar' }),
      (e) => e.code === S.UNIMPLEMENTED && /not implemented.*checkpoint/i.test(e.details));
  });

  test('UpdateRuntimeConfig keeps the pod CIDR (Status verbose shows it, also after a restart); a bad one is refused', async () => {
    const cidr = '10.244.7.0/24,fd00:10:244:7::/64';
    await sd.rt.UpdateRuntimeConfig({ runtime_config: { network_config: { pod_cidr: cidr } } });
    await assert.rejects(
      sd.rt.UpdateRuntimeConfig({ runtime_config: { network_config: { pod_cidr: '10.1.2.3/40' } } }),
      (e) => e.code === S.INVALID_ARGUMENT && /runtime_config\.network_config\.pod_cidr/.test(e.details));
    await sd.rt.UpdateRuntimeConfig({}); // nothing to apply
    const info = async () => (await sd.rt.Status({ verbose: true })).info;
    assert.equal(JSON.parse((await info()).podCIDR), cidr);
    await sd.restart();
    assert.equal(JSON.parse((await info()).podCIDR), cidr);
    assert.deepEqual((await sd.rt.Status({ verbose: false })).info, {});
  });

  test('Status verbose: config (with the runtime handlers), CNI config as JSON values', async () => {
    const { info, status } = await sd.rt.Status({ verbose: true });
    assert.ok(status.conditions.length >= 2);
    const cfg = JSON.parse(info.config);
    assert.equal(cfg.stateDir, sd.stateDir);
    assert.equal(cfg.cgroupDriver, 'cgroupfs');
    assert.equal(cfg.cgroupVersion, V2 ? 'v2' : 'v1');
    assert.equal(cfg.statsFsRefreshMs, FS_REFRESH_MS);
    assert.equal(cfg.streamServer, sd.streamBase);
    const cni = JSON.parse(info.cniconfig);
    assert.equal(cni.PluginConfDir, sd.cniDir);
    const net = cni.Networks[0];
    assert.equal(net.IFName, 'eth0');
    assert.equal(net.Config.Name, sd.cniConf.name);
    assert.deepEqual(net.Config.Plugins.map((p) => p.Network.type), sd.cniConf.plugins.map((p) => p.type));
    assert.equal(JSON.parse(net.Config.Plugins[0].Source).bridge, BRIDGE);
    assert.equal(JSON.parse(info.lastCNILoadStatus), 'OK');
    assert.deepEqual(cfg.runtimeHandlers.map((h) => [h.name, h.default]), [['', true]]);
    // the info keys never collide with the response fields crictl info shows beside them
    assert.deepEqual(Object.keys(info).sort(), ['cniconfig', 'config', 'lastCNILoadStatus', 'podCIDR']);
  });

  test('ListMetricDescriptors and ListPodSandboxMetrics: cAdvisor names, every metric described, the stats numbers', async () => {
    const { descriptors } = await sd.rt.ListMetricDescriptors({});
    const desc = Object.fromEntries(descriptors.map((d) => [d.name, d]));
    assert.deepEqual(desc.container_memory_working_set_bytes.label_keys,
      ['pod', 'namespace', 'container', 'id', 'image']);
    assert.ok(desc.container_network_receive_bytes_total.label_keys.includes('interface'));
    const { pod_metrics: pm } = await sd.rt.ListPodSandboxMetrics({});
    assert.deepEqual(pm.map((p) => p.pod_sandbox_id).sort(), [pod.id, hostPod.id].sort());
    const mine = pm.find((p) => p.pod_sandbox_id === pod.id);
    for (const m of [...mine.metrics, ...mine.container_metrics.flatMap((c) => c.metrics)]) {
      assert.ok(desc[m.name], `${m.name} is described`);
      assert.equal(m.label_values.length, desc[m.name].label_keys.length, m.name);
    }
    const rx = mine.metrics.find((m) => m.name === 'container_network_receive_bytes_total' &&
      m.label_values[5] === 'eth0');
    assert.ok(u64(rx.value) >= BigInt(UDP_PACKETS * UDP_BYTES));
    const cm = mine.container_metrics.find((c) => c.container_id === mem);
    const ws = cm.metrics.find((m) => m.name === 'container_memory_working_set_bytes');
    assert.deepEqual(ws.label_values, ['stats', 'sluice-test', 'mem', mem, BUSYBOX_IMAGE]);
    near('container_memory_working_set_bytes', u64(ws.value),
      u64((await cstats(mem)).memory.working_set_bytes), 4n * MIB);
    const cpu = cm.metrics.find((m) => m.name === 'container_cpu_usage_seconds_total');
    assert.equal(cpu.metric_type, 'COUNTER');
  });

  test('ImageFsInfo: the image store, exactly du of the image directory', async () => {
    const imageDir = path.join(sd.stateDir, 'images');
    const { image_filesystems: fsl, container_filesystems: cfs } = await sd.img.ImageFsInfo({});
    assert.equal(fsl.length, 1);
    assert.equal(fsl[0].fs_id.mountpoint, imageDir);
    const bytes = du(imageDir, '-B1');
    const inodes = du(imageDir, '--inodes');
    console.log(`ImageFsInfo ${u64(fsl[0].used_bytes)} B ${u64(fsl[0].inodes_used)} inodes; ` +
      `du ${bytes} B ${inodes} inodes`);
    assert.equal(u64(fsl[0].used_bytes), bytes);
    assert.equal(u64(fsl[0].inodes_used), inodes);
    assert.deepEqual(cfs, [], 'the writable layers share the image store file system');
  });

  test('40 stats calls at once: all answered, and the loop answers Version before they are done', async () => {
    // Sampling runs on worker threads: a Version sent after the 40 calls is
    // answered while they sample. Were the files read on the loop, the calls
    // would be served in order and Version would come after all of them.
    const t0 = Date.now();
    const done = [];
    const calls = [];
    for (let i = 0; i < 40; i++) {
      const call = i % 2 ? sd.rt.ListPodSandboxStats({}) : sd.rt.ListContainerStats({});
      calls.push(call.then((r) => { done.push(Date.now() - t0); return r; }));
    }
    await sd.rt.Version({});
    const versionMs = Date.now() - t0;
    const res = await Promise.all(calls);
    assert.ok(res.every((r) => r.stats.length >= 2));
    const last = Math.max(...done);
    console.log(`Version answered after ${versionMs} ms; the 40 stats calls took ${last} ms`);
    assert.ok(versionMs < last, `Version (${versionMs} ms) waited for every stats call (${last} ms)`);
  });
});

// ---- the reference --------------------------------------------------------------

const CONTAINERD = path.join(REPO, 'scripts/containerd');
const CTRD_ENV = {
  SLUICE_CONTAINERD_DIR: '/run/sluice-test/containerd-stats',
  SLUICE_CONTAINERD_STREAM_PORT: '10117',
};
const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function containerdSkip() {
  const base = skipReason();
  if (base) return base;
  for (const c of ['containerd', 'ctr']) if (!have(c)) return `${c} not installed (apt-get install containerd)`;
  return false;
}

function ctrd(args) {
  const r = spawnSync(CONTAINERD, args, { env: { ...process.env, ...CTRD_ENV }, encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) throw new Error(`scripts/containerd ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

// The non-null leaves of a stats message, as "a.b.c" paths.
function leaves(o, pre = '') {
  const out = [];
  for (const [k, v] of Object.entries(o ?? {})) {
    if (v === null || k === 'labels' || k === 'annotations') continue;
    if (typeof v === 'object' && !Array.isArray(v)) out.push(...leaves(v, `${pre}${k}.`));
    else out.push(`${pre}${k}`);
  }
  return out.sort();
}

describe('the same container on containerd 1.6 (reference)', { skip: containerdSkip() }, () => {
  let sd, cd, startedHere = false, cdPod, cdCtr, sdCtr;
  const load = ['sh', '-c', 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=32 && exec sleep 3600'];
  const podConfig = (name) => ({
    metadata: { name, uid: `${name}-${process.pid}`, namespace: 'sluice-test', attempt: 0 },
    log_directory: '', labels: { app: name },
    linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  });

  before(async () => {
    startedHere = spawnSync(CONTAINERD, ['status'], { env: { ...process.env, ...CTRD_ENV } }).status !== 0;
    if (startedHere) ctrd(['start']);
    const env = Object.fromEntries(ctrd(['env']).trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    cd = await connectCri(env.CONTAINERD_ENDPOINT);
    const config = podConfig('statsref');
    cdPod = (await cd.runtime.RunPodSandbox({ config })).pod_sandbox_id;
    cdCtr = (await cd.runtime.CreateContainer({
      pod_sandbox_id: cdPod, sandbox_config: config,
      config: { metadata: { name: 'mem', attempt: 0 }, image: { image: BUSYBOX_IMAGE }, command: load, labels: { role: 'mem' } },
    })).container_id;
    await cd.runtime.StartContainer({ container_id: cdCtr });
    sd = await SluicedInstance.start({ label: 'stref' });
    const p = await sd.runPod('statsref', { hostNetwork: true });
    sdCtr = await sd.runContainer(p, 'mem', { command: load, labels: { role: 'mem' } });
    await sleep(1500); // both wrote their 32 MiB
  }, { timeout: 180000 });

  after(async () => {
    if (cd) {
      await cd.runtime.StopPodSandbox({ pod_sandbox_id: cdPod }).catch(() => {});
      await cd.runtime.RemovePodSandbox({ pod_sandbox_id: cdPod }).catch(() => {});
      cd.close();
    }
    if (startedHere) ctrd(['stop', '--purge']);
    if (sd) await sd.stop(); // the clean path: no sanitizer report, nothing left
  }, { timeout: 120000 });

  test('ContainerStats: the same fields, the same working set for the same load', async () => {
    const a = (await cd.runtime.ContainerStats({ container_id: cdCtr })).stats;
    const b = (await sd.rt.ContainerStats({ container_id: sdCtr })).stats;
    // containerd 1.6 sets available_bytes 0 without a limit and usage_nano_cores 0 on a
    // first sample; sluice leaves both unset (cAdvisor's way). sluice fills swap (CRI
    // 1.32; containerd 1.6 predates the field). Those are the only differences.
    const ours = leaves(b);
    const theirs = leaves(a);
    assert.deepEqual(theirs.filter((k) => !ours.includes(k)),
      ['cpu.usage_nano_cores.value', 'memory.available_bytes.value']);
    assert.equal(u64(a.memory.available_bytes), 0n);
    assert.deepEqual(ours.filter((k) => !theirs.includes(k)), ['swap.swap_usage_bytes.value', 'swap.timestamp']);
    for (const s of [a, b]) {
      between('working set', 32n * MIB, u64(s.memory.working_set_bytes), 48n * MIB);
      assert.ok(u64(s.cpu.usage_core_nano_seconds) > 0n);
    }
    console.log(`working set: containerd ${u64(a.memory.working_set_bytes)}, sluice ${u64(b.memory.working_set_bytes)}`);
    const f = await cd.runtime.ListContainerStats({ filter: { label_selector: { role: 'mem' } } });
    assert.deepEqual(f.stats.map((s) => s.attributes.id), [cdCtr]);
  });

  test('CheckpointContainer UNIMPLEMENTED on both; RuntimeConfig and the metrics calls are newer than containerd 1.6', async () => {
    for (const rt of [cd.runtime, sd.rt])
      await assert.rejects(rt.CheckpointContainer({ container_id: 'x' }), (e) => e.code === S.UNIMPLEMENTED);
    for (const m of ['RuntimeConfig', 'ListMetricDescriptors', 'ListPodSandboxMetrics'])
      await assert.rejects(cd.runtime[m]({}), (e) => e.code === S.UNIMPLEMENTED, m);
  });
});
