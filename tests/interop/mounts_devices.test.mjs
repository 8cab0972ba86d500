// ContainerConfig.mounts and .devices as seen from inside the containers,
// on sluiced and, where it accepts the same config, the reference containerd
// 1.6 (a private instance), asserting that both agree: read-only and
// read-write binds, recursive read-only, a missing host path created as a
// directory, propagation (a mount made on the host after the start shows up
// under rslave and rshared binds, which join the host mount's peer group;
// not under rprivate), device nodes with their cgroup permissions; and the
// refusals naming the field, after which sluiced keeps serving.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as grpcStatus } from './lib/cri.mjs';
import { containerdSkipReason, PrivateContainerd } from './lib/ctrd_private.mjs';
import { BUSYBOX_IMAGE, destroyAll, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const CONTAINERD_PORT = 10174;
const DEADLINE_MS = 30000;
const NS = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };

function sh(cmd) {
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.trim();
}

// The host's mountinfo entry of mp: its optional fields (shared:N, master:N).
function hostPeers(mp) {
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f[4] === mp) return f.slice(6, f.indexOf('-'));
  }
  return null;
}

class Side {
  constructor(name, rt, logRoot) {
    this.name = name;
    this.rt = rt;
    this.logRoot = logRoot;
    this.pods = [];
    this.n = 0;
  }

  async pod() {
    const n = ++this.n;
    const config = {
      metadata: { name: 'mnt', uid: `podns-mnt-${process.pid}-${this.name}-${n}`, namespace: 'sluice-test', attempt: 0 },
      log_directory: path.join(this.logRoot, `${this.name}-${n}`),
      linux: { security_context: { namespace_options: NS } },
    };
    const r = await this.rt.RunPodSandbox({ config }, { deadlineMs: DEADLINE_MS });
    this.pods.push(r.pod_sandbox_id);
    return { id: r.pod_sandbox_id, config };
  }

  async create(pod, name, extra) {
    const config = {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX_IMAGE },
      command: ['sleep', '3600'],
      log_path: `${name}.log`,
      linux: { security_context: { namespace_options: NS } },
      ...extra,
    };
    const r = await this.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config, sandbox_config: pod.config }, { deadlineMs: DEADLINE_MS });
    return r.container_id;
  }

  async run(pod, name, extra) {
    const id = await this.create(pod, name, extra);
    await this.rt.StartContainer({ container_id: id }, { deadlineMs: DEADLINE_MS });
    return id;
  }

  async sh(id, script) {
    const r = await this.rt.ExecSync({ container_id: id, cmd: ['sh', '-c', script], timeout: 20 },
      { deadlineMs: DEADLINE_MS });
    return { code: r.exit_code, out: r.stdout.toString().trim(), err: r.stderr.toString().trim() };
  }

  async ok(id, script) {
    const r = await this.sh(id, script);
    assert.equal(r.code, 0, `${this.name}: ${script}: ${r.err}`);
    return r.out;
  }

  async fails(id, script, re) {
    const r = await this.sh(id, script);
    assert.notEqual(r.code, 0, `${this.name}: ${script} succeeded`);
    assert.match(r.err + r.out, re, `${this.name}: ${script}`);
  }

  // The container's own mountinfo line for mp: its optional fields.
  async peers(id, mp) {
    const line = (await this.ok(id, 'cat /proc/self/mountinfo')).split('\n')
      .map((l) => l.split(' ')).find((f) => f[4] === mp);
    assert.ok(line, `${this.name}: ${mp} is mounted`);
    return line.slice(6, line.indexOf('-'));
  }

  async removePods() {
    for (const id of this.pods.splice(0)) {
      await this.rt.StopPodSandbox({ pod_sandbox_id: id }, { deadlineMs: DEADLINE_MS }).catch(() => {});
      await this.rt.RemovePodSandbox({ pod_sandbox_id: id }, { deadlineMs: DEADLINE_MS }).catch(() => {});
    }
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

describe('mounts and devices', { skip: reason }, () => {
  let sd, ref, sides, base;
  const hostMounts = []; // unmounted in after(), deepest first

  function hostMount(args, target) {
    fs.mkdirSync(target, { recursive: true });
    sh(`mount ${args} ${target}`);
    hostMounts.unshift(target);
  }

  before(async () => {
    sd = await SluicedInstance.start({ label: 'podmnt' });
    sides = [new Side('sluiced', sd.rt, path.join(sd.root, 'logs'))];
    if (!refReason) {
      ref = await PrivateContainerd.start('podmnt', CONTAINERD_PORT);
      sides.push(new Side('containerd', ref.cri.runtime, path.join(sd.root, 'logs')));
    }
    base = fs.mkdtempSync('/tmp/podns-mnt-');
  }, { timeout: 180000 });

  after(async () => {
    for (const s of sides || []) await s.removePods();
    for (const m of hostMounts) spawnSync('umount', ['-l', m]);
    if (base) fs.rmSync(base, { recursive: true, force: true });
    await ref?.stop();
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 180000 });

  test('reference: containerd runs beside sluiced', { skip: refReason }, () => {
    assert.equal(sides.length, 2);
  });

  test('read-only bind refuses writes, a read-write one writes to the host', async () => {
    const dir = path.join(base, 'rw');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'f'), 'from host\n');
    for (const side of sides) {
      const pod = await side.pod();
      const c = await side.run(pod, 'c', {
        mounts: [{ host_path: dir, container_path: '/ro', readonly: true },
          { host_path: dir, container_path: '/rw' }],
      });
      assert.equal(await side.ok(c, 'cat /ro/f'), 'from host');
      await side.fails(c, 'touch /ro/x', /Read-only file system/);
      await side.ok(c, `echo ${side.name} > /rw/by-${side.name}`);
      assert.equal(fs.readFileSync(path.join(dir, `by-${side.name}`), 'utf8'), `${side.name}\n`);
      await side.removePods();
    }
  });

  test('readonly is not recursive; recursive_read_only is (sluiced; the feature is reported)', async () => {
    const dir = path.join(base, 'rro');
    hostMount('-t tmpfs none', path.join(dir, 'tmpfs'));
    for (const side of sides) { // plain readonly: the submount stays writable, on both
      const pod = await side.pod();
      const c = await side.run(pod, 'c', {
        mounts: [{ host_path: dir, container_path: '/mnt', readonly: true, selinux_relabel: true }],
      });
      await side.ok(c, 'touch /mnt/tmpfs/file');
      await side.fails(c, 'touch /mnt/x', /Read-only file system/);
      await side.removePods();
    }
    const st = await sd.rt.Status({ verbose: false });
    const dflt = st.runtime_handlers.find((h) => h.name === '');
    assert.equal(dflt.features.recursive_read_only_mounts, true);
    const side = sides[0];
    const pod = await side.pod();
    const c = await side.run(pod, 'c', {
      mounts: [{ host_path: dir, container_path: '/mnt', readonly: true, recursive_read_only: true }],
    });
    await side.fails(c, 'touch /mnt/tmpfs/rro', /Read-only file system/);
    await side.fails(c, 'touch /mnt/x', /Read-only file system/);
    for (const [m, re] of [
      [{ readonly: false }, /mounts\[0\]\.recursive_read_only: needs readonly/],
      [{ readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }, /needs propagation PROPAGATION_PRIVATE/],
    ])
      await expectCode(side.create(pod, 'bad', {
        mounts: [{ host_path: dir, container_path: '/mnt', recursive_read_only: true, ...m }],
      }), grpcStatus.INVALID_ARGUMENT, re);
    await side.removePods();
  });

  test('a missing host path is created as a directory (0755), as containerd does', async () => {
    for (const side of sides) {
      const missing = path.join(base, `missing-${side.name}`, 'deep');
      const pod = await side.pod();
      const c = await side.run(pod, 'c', { mounts: [{ host_path: missing, container_path: '/m' }] });
      const st = fs.statSync(missing);
      assert.ok(st.isDirectory(), side.name);
      assert.equal(st.mode & 0o777, 0o755, side.name);
      await side.ok(c, 'test -d /m && touch /m/in');
      assert.ok(fs.existsSync(path.join(missing, 'in')));
      await side.removePods();
    }
  });

  test('propagation: rslave and rshared binds see a host mount made after the start, rprivate does not', async () => {
    const shared = path.join(base, 'shared');
    hostMount('-t tmpfs podns-shared', shared);
    sh(`mount --make-shared ${shared}`);
    const group = hostPeers(shared).find((o) => o.startsWith('shared:')).slice(7);
    for (const side of sides) {
      const pod = await side.pod();
      const c = await side.run(pod, 'c', {
        mounts: [
          { host_path: shared, container_path: '/priv', propagation: 'PROPAGATION_PRIVATE' },
          { host_path: shared, container_path: '/slave', propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
          { host_path: shared, container_path: '/both', propagation: 'PROPAGATION_BIDIRECTIONAL' },
        ],
      });
      // From inside: rshared joins the host mount's peer group, rslave
      // receives from it, rprivate has neither.
      assert.ok((await side.peers(c, '/both')).includes(`shared:${group}`), side.name);
      assert.ok((await side.peers(c, '/slave')).includes(`master:${group}`), side.name);
      assert.deepEqual((await side.peers(c, '/priv')).filter((o) => o.includes(`:${group}`)), [],
        side.name);
      const sub = path.join(shared, `sub-${side.name}`);
      hostMount('-t tmpfs podns-sub', sub);
      fs.writeFileSync(path.join(sub, 'after-start'), 'propagated\n');
      await sleep(100);
      const name = `sub-${side.name}/after-start`;
      assert.equal(await side.ok(c, `cat /slave/${name}`), 'propagated');
      assert.equal(await side.ok(c, `cat /both/${name}`), 'propagated');
      await side.fails(c, `cat /priv/${name}`, /No such file/);
      const st = (await side.rt.ContainerStatus({ container_id: c })).status;
      assert.deepEqual(st.mounts.map((m) => [m.container_path, m.host_path, m.propagation]), [
        ['/priv', shared, 'PROPAGATION_PRIVATE'],
        ['/slave', shared, 'PROPAGATION_HOST_TO_CONTAINER'],
        ['/both', shared, 'PROPAGATION_BIDIRECTIONAL'],
      ], side.name);
      await side.removePods();
    }
  });

  test('propagation from a private host mount is refused naming the mount and why', async () => {
    const priv = path.join(base, 'private');
    hostMount('-t tmpfs podns-private', priv);
    sh(`mount --make-private ${priv}`);
    const side = sides[0];
    const pod = await side.pod();
    await expectCode(side.create(pod, 'c', {
      mounts: [{ host_path: priv, container_path: '/p', propagation: 'PROPAGATION_BIDIRECTIONAL' }],
    }), grpcStatus.INVALID_ARGUMENT,
    new RegExp(`mounts\\[0\\]\\.propagation: PROPAGATION_BIDIRECTIONAL needs a shared mount: "${priv}" is on "${priv}"`));
    await expectCode(side.create(pod, 'c', {
      mounts: [{ host_path: path.join(priv), container_path: '/p' },
        { host_path: priv, container_path: '/q', propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
    }), grpcStatus.INVALID_ARGUMENT, /mounts\[1\]\.propagation: PROPAGATION_HOST_TO_CONTAINER needs a shared or slave mount/);
    await side.removePods();
  });

  test('bad mounts are refused naming the field; sluiced keeps serving', async () => {
    const side = sides[0];
    const pod = await side.pod();
    const dir = path.join(base, 'bad');
    fs.mkdirSync(dir);
    const cases = [
      [{ host_path: '', container_path: '/x' }, grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.host_path: empty/],
      [{ host_path: dir, container_path: '' }, grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.container_path: empty/],
      [{ host_path: 'rel/dir', container_path: '/x' }, grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.host_path: "rel\/dir" is not absolute/],
      [{ host_path: dir, container_path: 'x' }, grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.container_path: "x" is not absolute/],
      [{ host_path: dir, container_path: '/x', propagation: 7 }, grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.propagation: unknown value 7/],
      [{ host_path: dir, container_path: '/x', uidMappings: [{ host_id: 1000, container_id: 0, length: 1 }] },
        grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.uidMappings: the pod sandbox has no user namespace of its own/],
      [{ host_path: dir, container_path: '/x', gidMappings: [{ host_id: 1000, container_id: 0, length: 1 }] },
        grpcStatus.INVALID_ARGUMENT, /mounts\[0\]\.gidMappings: the pod sandbox has no user namespace/],
      [{ host_path: '', container_path: '/x', image: { image: BUSYBOX_IMAGE } },
        grpcStatus.UNIMPLEMENTED, /mounts\[0\]\.image: image volumes are not supported/],
    ];
    for (const [m, code, re] of cases)
      await expectCode(side.create(pod, 'bad', { mounts: [m] }), code, re);
    const many = Array.from({ length: 257 }, (_, i) => ({ host_path: dir, container_path: `/m${i}` }));
    await expectCode(side.create(pod, 'bad', { mounts: many }), grpcStatus.INVALID_ARGUMENT,
      /mounts: 257 mounts, at most 256/);
    assert.equal((await sd.rt.Version({ version: '' })).runtime_name, 'sluice');
    await side.removePods();
  });

  // /dev/fuse (10:229) is not among the nodes runc always allows (null,
  // zero, full, random, urandom, tty, ptmx), so only the rule we add lets
  // the container open it, and only for the access it names.
  test('devices: nodes with the given cgroup permissions, opened as allowed only', async () => {
    for (const side of sides) {
      const pod = await side.pod();
      const c = await side.run(pod, 'c', {
        devices: [
          { host_path: '/dev/null', container_path: '/dev/mynull', permissions: 'rw' },
          { host_path: '/dev/fuse', container_path: '/dev/fuse-r', permissions: 'r' },
        ],
      });
      assert.equal(await side.ok(c, 'test -c /dev/mynull && stat -c "%t %T" /dev/mynull'), '1 3');
      await side.ok(c, 'echo hi > /dev/mynull');
      assert.equal(await side.ok(c, 'stat -c "%t %T" /dev/fuse-r'), 'a e5');
      await side.ok(c, 'exec 3</dev/fuse-r');
      await side.fails(c, 'exec 3>/dev/fuse-r', /Operation not permitted/);
      await side.fails(c, 'mknod /tmp/f c 10 229 && exec 3<>/tmp/f', /Operation not permitted/);
      // the cgroup rule is per device number: another container for rw
      const w = await side.run(pod, 'w', {
        devices: [{ host_path: '/dev/fuse', container_path: '/dev/fuse-rw', permissions: 'mrw' }],
      });
      await side.ok(w, 'exec 3<>/dev/fuse-rw');
      await side.removePods();
    }
  });

  test('devices: a host directory adds every device node under it', async () => {
    const dir = path.join(base, 'devdir');
    fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
    sh(`mknod ${dir}/null2 c 1 3 && mknod ${dir}/sub/zero2 c 1 5 && echo x > ${dir}/plain`);
    for (const side of sides) {
      const pod = await side.pod();
      const c = await side.run(pod, 'c', {
        devices: [{ host_path: dir, container_path: '/dev/mydir', permissions: 'rwm' }],
      });
      assert.equal(await side.ok(c, 'stat -c "%t %T" /dev/mydir/null2 /dev/mydir/sub/zero2'), '1 3\n1 5');
      await side.ok(c, 'echo hi > /dev/mydir/null2 && head -c 2 /dev/mydir/sub/zero2 | wc -c');
      await side.fails(c, 'ls /dev/mydir/plain', /No such file/);
      await side.removePods();
    }
  });

  test('bad devices are refused naming the field; sluiced keeps serving', async () => {
    const side = sides[0];
    const pod = await side.pod();
    const file = path.join(base, 'regular');
    fs.writeFileSync(file, 'x');
    const dev = (d) => ({ devices: [{ container_path: '/dev/x', permissions: 'rw', ...d }] });
    const cases = [
      [dev({ host_path: '/dev/podns-nope' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.host_path: "\/dev\/podns-nope": No such file or directory/],
      [dev({ host_path: file }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.host_path: ".*regular" is not a device node/],
      [dev({ host_path: '' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.host_path: empty/],
      [dev({ host_path: 'dev/null' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.host_path: "dev\/null" is not absolute/],
      [dev({ host_path: '/dev/null', container_path: 'x' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.container_path/],
      [dev({ host_path: '/dev/null', permissions: 'rx' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.permissions: "rx"/],
      [dev({ host_path: '/dev/null', permissions: '' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.permissions: ""/],
      [dev({ host_path: '/dev/null', permissions: 'rr' }), grpcStatus.INVALID_ARGUMENT, /devices\[0\]\.permissions: "rr"/],
      [{ CDI_devices: [{ name: 'vendor.com/gpu=0' }] }, grpcStatus.UNIMPLEMENTED, /CDI_devices: CDI devices are not supported \("vendor\.com\/gpu=0"\)/],
    ];
    for (const [extra, code, re] of cases) await expectCode(side.create(pod, 'bad', extra), code, re);
    assert.equal((await sd.rt.Version({ version: '' })).runtime_name, 'sluice');
    await side.removePods();
  });
});
