// Pods with a user namespace of their own (CRI userns_options mode POD with
// one uid and one gid mapping, what a kubelet sends for `hostUsers: false`),
// seen from inside the containers and from the host:
//   - Status announces user_namespaces for the handler, so a kubelet sends
//     such pods at all;
//   - inside, /proc/self/uid_map and gid_map are the pod's mapping, the
//     process is root (0) while the host sees the mapped id; the pod's
//     network, IPC and UTS namespaces belong to that user namespace (root
//     inside may configure its loopback), so does the shared pid namespace
//     (its /proc is mounted, pid 1 is sluice-pause);
//   - the image's files are root's inside (the layers are idmapped), and what
//     the container writes lands on disk under the mapped host ids;
//   - a volume with the pod's mappings shows host root's files as root's; one
//     without shows them as the overflow id; removing the pod leaves the
//     volume's files alone;
//   - ExecSync and streaming exec run in the same user namespace;
//   - what cannot be honoured is refused by name: several mappings, id 0 not
//     mapped, mode CONTAINER or TARGET, the host's network with POD, a
//     container asking for other mappings.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as grpcStatus } from './lib/cri.mjs';
import { CH, V5, runSession } from './lib/session.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason, wsUrl } from './lib/sluiced.mjs';

const DEADLINE_MS = 30000;
const HOST_UID = 1000000; // the pod's root on the host
const HOST_GID = 2000000;
const LENGTH = 65536;
const mapping = (host) => [{ container_id: 0, host_id: host, length: LENGTH }];
const USERNS = { mode: 'POD', uids: mapping(HOST_UID), gids: mapping(HOST_GID) };
const NS = { network: 'POD', pid: 'POD', ipc: 'POD', userns_options: USERNS };

async function expectCode(promise, code, re) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `${err.code}: ${err.details || err.message}`);
    assert.match(err.details || err.message, re);
    return true;
  });
}

// The host's view of a process found by its (unique) command line.
function hostProcess(cmdline) {
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    if (cmd === cmdline) {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      return { pid, uid: /^Uid:\s+(\d+)/m.exec(status)[1], gid: /^Gid:\s+(\d+)/m.exec(status)[1] };
    }
  }
  return null;
}

describe('pods with their own user namespace', { skip: skipReason({ cni: true }), timeout: 180000 }, () => {
  let sd;
  let vol; // a host directory with a file of host root's
  let n = 0;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'userns', cni: { bridge: 'slt-userns', subnet: '10.89.31.0/24' } });
    vol = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-userns-vol-'));
    fs.writeFileSync(path.join(vol, 'f'), 'volume\n');
    fs.chownSync(path.join(vol, 'f'), 0, 0);
    fs.chmodSync(vol, 0o777); // reachable, and writable, for the overflow id too
  });

  after(async () => {
    await sd?.stop();
    if (vol) fs.rmSync(vol, { recursive: true, force: true });
  });

  const podConfig = (name, ns = NS) => {
    const config = sd.podConfig(`${name}-${++n}`);
    config.linux.security_context.namespace_options = ns;
    return config;
  };

  async function runPod(name, ns = NS) {
    const config = podConfig(name, ns);
    const r = await sd.rt.RunPodSandbox({ config }, { deadlineMs: DEADLINE_MS });
    sd.podIds.add(r.pod_sandbox_id);
    return { id: r.pod_sandbox_id, config };
  }

  async function run(pod, name, command, { mounts = [], ns = NS, caps = [] } = {}) {
    const config = {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX_IMAGE },
      command,
      log_path: `${name}.log`,
      mounts,
      linux: { security_context: { namespace_options: ns, capabilities: { add_capabilities: caps } } },
    };
    const r = await sd.rt.CreateContainer({ pod_sandbox_id: pod.id, config, sandbox_config: pod.config },
      { deadlineMs: DEADLINE_MS });
    await sd.rt.StartContainer({ container_id: r.container_id }, { deadlineMs: DEADLINE_MS });
    return r.container_id;
  }

  async function sh(id, script) {
    const r = await sd.execSync(id, ['sh', '-c', script], 20);
    assert.equal(r.exit_code, 0, `${script}: ${r.stderr}`);
    return r.stdout.toString();
  }

  test('Status announces user namespaces for the default handler and "runc"', async () => {
    const st = await sd.rt.Status({ verbose: false });
    const handlers = st.runtime_handlers.map((h) => [h.name, h.features.user_namespaces]);
    assert.deepEqual(handlers, [['', true], ['runc', true]]);
  });

  test('inside: the pod\'s mapping, root; on the host: the mapped ids', async () => {
    const pod = await runPod('ids');
    const a = await run(pod, 'a', ['sleep', '4251'], { caps: ['NET_ADMIN'] });
    assert.match(await sh(a, 'cat /proc/self/uid_map'), new RegExp(`^\\s+0\\s+${HOST_UID}\\s+${LENGTH}\\n$`));
    assert.match(await sh(a, 'cat /proc/self/gid_map'), new RegExp(`^\\s+0\\s+${HOST_GID}\\s+${LENGTH}\\n$`));
    assert.equal(await sh(a, 'id -u; id -g'), '0\n0\n');
    const host = hostProcess('sleep 4251');
    assert.ok(host, 'the container\'s sleep is seen on the host');
    assert.deepEqual([host.uid, host.gid], [String(HOST_UID), String(HOST_GID)]);
    assert.notEqual(fs.readlinkSync(`/proc/${host.pid}/ns/user`), fs.readlinkSync('/proc/self/ns/user'));
    // the user namespace owns the pod's others: root inside, given
    // CAP_NET_ADMIN, configures the pod's loopback with it, and the shared pid namespace's
    // /proc is mounted, with sluice-pause as pid 1
    assert.equal(await sh(a, 'ip link set lo mtu 1400 && cat /sys/class/net/lo/mtu; ip link set lo mtu 65536'),
      '1400\n');
    assert.equal(await sh(a, 'cat /proc/1/comm'), 'sluice-pause\n');
    // a second container is in the same user namespace
    const b = await run(pod, 'b', ['sleep', '4252']);
    assert.equal(await sh(b, 'readlink /proc/self/ns/user'), await sh(a, 'readlink /proc/self/ns/user'));
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
  });

  test('the image\'s files are root\'s inside; what root writes is stored under the mapped ids', async () => {
    const pod = await runPod('rootfs');
    const a = await run(pod, 'a', ['sleep', '4253']);
    assert.equal(await sh(a, 'stat -c "%u %g" /bin /etc'), '0 0\n0 0\n');
    assert.equal(await sh(a, 'echo hi > /etc/written && chown 7:8 /etc && stat -c "%u %g" /etc/written /etc'),
      '0 0\n7 8\n');
    const upper = path.join(sd.stateDir, 'containers', a, 'upper');
    const st = fs.statSync(path.join(upper, 'etc', 'written'));
    assert.deepEqual([st.uid, st.gid], [HOST_UID, HOST_GID]);
    const etc = fs.statSync(path.join(upper, 'etc'));
    assert.deepEqual([etc.uid, etc.gid], [HOST_UID + 7, HOST_GID + 8]);
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
  });

  test('volumes: with the pod\'s mappings host root\'s files are root\'s, without they are the overflow id',
    async () => {
      const pod = await runPod('vol');
      const mounts = [
        { container_path: '/mapped', host_path: vol, uidMappings: USERNS.uids, gidMappings: USERNS.gids },
        { container_path: '/plain', host_path: vol, readonly: true },
      ];
      const a = await run(pod, 'a', ['sleep', '4254'], { mounts });
      assert.equal(await sh(a, 'stat -c "%u %g" /mapped/f /plain/f; cat /mapped/f'),
        '0 0\n65534 65534\nvolume\n');
      await sh(a, 'echo new > /mapped/g');
      const g = fs.statSync(path.join(vol, 'g'));
      assert.deepEqual([g.uid, g.gid], [0, 0], 'root inside writes host root\'s files through the mapping');
      await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
      await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      assert.equal(fs.readFileSync(path.join(vol, 'f'), 'utf8'), 'volume\n', 'the volume outlives the pod');
      assert.ok(fs.existsSync(path.join(vol, 'g')));
    });

  test('ExecSync and streaming exec run in the pod\'s user namespace', async () => {
    const pod = await runPod('exec');
    const a = await run(pod, 'a', ['sleep', '4255']);
    assert.match(await sh(a, 'cat /proc/self/uid_map'), new RegExp(`\\s${HOST_UID}\\s`));
    const s = await runSession(wsUrl(await sd.execUrl(a, ['sh', '-c', 'id -u; cat /proc/self/gid_map'])),
      { protocols: [V5] });
    assert.match(s.text(CH.STDOUT), new RegExp(`^0\\n\\s+0\\s+${HOST_GID}\\s+${LENGTH}\\n$`));
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
  });

  test('PodSandboxStatus reports the user namespace the pod was created with', async () => {
    const pod = await runPod('status');
    const r = await sd.rt.PodSandboxStatus({ pod_sandbox_id: pod.id, verbose: true });
    const o = r.status.linux.namespaces.options;
    const user = JSON.parse(r.info.info).namespaces.user;
    assert.match(user, /\/ns\/user$/);
    assert.equal(fs.statSync(user).isFile(), true, 'the pinned user namespace');
    assert.equal(o.userns_options.mode, 'POD');
    assert.deepEqual(o.userns_options.uids.map((m) => [m.container_id, m.host_id, m.length]),
      [[0, HOST_UID, LENGTH]]);
    assert.deepEqual(o.userns_options.gids.map((m) => [m.container_id, m.host_id, m.length]),
      [[0, HOST_GID, LENGTH]]);
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
  });

  test('what cannot be honoured is refused by name', async () => {
    const two = [...mapping(HOST_UID), { container_id: 0, host_id: HOST_UID + LENGTH, length: LENGTH }];
    const cases = [
      [{ ...NS, userns_options: { ...USERNS, uids: two } }, /userns_options\.uids: 2 mappings/],
      [{ ...NS, userns_options: { ...USERNS, gids: [{ container_id: 1, host_id: HOST_GID, length: LENGTH }] } },
        /userns_options\.gids\[0\]: container id 0 is not mapped/],
      [{ ...NS, userns_options: { mode: 'CONTAINER' } }, /userns_options\.mode: CONTAINER/],
      [{ ...NS, userns_options: { mode: 'TARGET' } }, /userns_options\.mode: TARGET/],
      [{ ...NS, network: 'NODE' }, /cannot use the host's network namespace/],
      [{ ...NS, userns_options: { ...USERNS, uids: mapping(0) } }, /\(host id 0\)/],
    ];
    for (const [ns, re] of cases)
      await expectCode(sd.rt.RunPodSandbox({ config: podConfig('bad', ns) }, { deadlineMs: DEADLINE_MS }),
        grpcStatus.INVALID_ARGUMENT, re);
    const pod = await runPod('badctr');
    const other = { ...NS, userns_options: { ...USERNS, uids: mapping(HOST_UID + LENGTH) } };
    await expectCode(run(pod, 'c', ['true'], { ns: other }), grpcStatus.INVALID_ARGUMENT,
      /userns_options: the mappings differ from the pod sandbox's/);
    await expectCode(run(pod, 'd', ['true'], { ns: { ...NS, userns_options: { mode: 'NODE' } } }),
      grpcStatus.INVALID_ARGUMENT, /userns_options: NODE, but the pod sandbox has a user namespace/);
    await expectCode(run(pod, 'e', ['true'], {
      mounts: [{ container_path: '/v', host_path: vol, uidMappings: USERNS.uids, gidMappings: USERNS.gids,
        propagation: 'PROPAGATION_HOST_TO_CONTAINER' }] }),
    grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.propagation: an idmapped mount is a copy/);
    // and sluiced goes on serving the pod
    const ok = await run(pod, 'ok', ['sleep', '4256']);
    assert.equal(await sh(ok, 'id -u'), '0\n');
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
  });
});
