// Bad input to sluiced, with pods and a running container in place: raw
// HTTP/2 (Node's http2 on the unix socket) for malformed gRPC frames and
// protobuf, grpc-js for unknown methods, unknown ids and invalid CRI
// requests, and the command line / config file for invalid configuration.
// After each, the daemon still answers Version. Needs root and runc (it
// runs a real container to aim the bad requests at).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, status as S } from './lib/cri.mjs';
import {
  SLUICED, SluicedInstance, grpcStatus, h2connect, lpm, rawCall, serialize, skipReason, unaryRaw,
} from './lib/sluiced.mjs';

const skip = skipReason();
const RT = '/runtime.v1.RuntimeService/';
const IMG = '/runtime.v1.ImageService/';
const NOPE = 'f'.repeat(64);

// protobuf wire helpers for appendField
function readVarint(buf, at) {
  let v = 0, mul = 1, i = at;
  for (;;) {
    const b = buf[i++];
    v += (b & 0x7f) * mul;
    if (b < 0x80) return [v, i];
    mul *= 128;
  }
}
function varint(v) {
  const out = [];
  while (v >= 0x80) { out.push((v % 128) | 0x80); v = Math.floor(v / 128); }
  out.push(v);
  return Buffer.from(out);
}
// msg with `extra` appended inside the length-delimited field reached by the
// field numbers of path (the message itself for an empty path).
function appendField(msg, path, extra) {
  if (path.length === 0) return Buffer.concat([msg, extra]);
  const parts = [];
  let i = 0, done = false;
  while (i < msg.length) {
    const start = i;
    let key; [key, i] = readVarint(msg, i);
    const field = Math.floor(key / 8), wire = key % 8;
    if (wire === 0) { [, i] = readVarint(msg, i); }
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      let len; [len, i] = readVarint(msg, i);
      if (field === path[0] && !done) {
        const inner = appendField(msg.subarray(i, i + len), path.slice(1), extra);
        parts.push(varint(key), varint(inner.length), inner);
        i += len; done = true;
        continue;
      }
      i += len;
    } else throw new Error(`wire type ${wire}`);
    parts.push(msg.subarray(start, i));
  }
  if (!done) throw new Error(`field ${path[0]} not found`);
  return Buffer.concat(parts);
}

async function rejectsWith(promise, code, re) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.code, code, `want ${code}, got ${e.code}: ${e.details}`);
    if (re) assert.match(e.details, re);
    return true;
  });
}

describe('sluiced bad input', { skip }, () => {
  let sd;
  let pod;
  let ctr; // running
  let created; // created, never started

  let startError = null;
  // A failing before() would only cancel the tests (not counted as failed):
  // the daemon starts here, the pod in the first test.
  before(async () => {
    sd = await SluicedInstance.start({ label: 'bad' }).catch((e) => {
      startError = e;
      return null;
    });
  });

  test('setup: a host-network pod with a running and a created container', async () => {
    if (startError) throw startError;
    pod = await sd.runPod('target', { hostNetwork: true });
    ctr = await sd.runContainer(pod, 'sleeper', { command: ['sleep', '100000'] });
    created = await sd.createContainer(pod, 'idle', { command: ['true'] });
  });
  after(async () => {
    await sd?.destroy();
  });

  // A fresh connection still gets Version, and the container still runs.
  async function stillServing() {
    sd.assertAlive();
    const c = await connectCri(sd.endpoint);
    try {
      const v = await c.runtime.Version({ version: '' });
      assert.equal(v.runtime_api_version, 'v1');
    } finally {
      c.close();
    }
    assert.equal((await sd.status(ctr)).state, 'CONTAINER_RUNNING');
  }

  test('raw HTTP/2: malformed gRPC frames get an error status, HTTP 200', async () => {
    const session = await h2connect(sd.sock);
    try {
      const msg = serialize('RuntimeService', 'ContainerStatus', { container_id: ctr });
      const cases = [
        ['compressed flag 1 (no compression agreed)', lpm(msg, 1)],
        ['flag 7', lpm(msg, 7)],
        ['3 bytes of a 5-byte prefix', Buffer.from([0, 0, 0])],
        ['a prefix announcing more than is sent', lpm(msg).subarray(0, 8)],
        ['two messages in a unary call', Buffer.concat([lpm(msg), lpm(msg)])],
        ['no message at all', Buffer.alloc(0)],
        ['a length of 4 GiB - 1', lpm(Buffer.alloc(10), 0, 0xffffffff)],
      ];
      for (const [what, body] of cases) {
        const r = await rawCall(session, `${RT}ContainerStatus`, body);
        const st = grpcStatus(r);
        assert.equal(r.http, 200, what);
        assert.ok(st.code > 0, `${what}: ${JSON.stringify(st)}`);
        assert.ok(st.message, `${what}: no grpc-message`);
      }
      // the same connection still works
      const ok = await rawCall(session, `${RT}ContainerStatus`, lpm(msg));
      assert.equal(grpcStatus(ok).code, S.OK);
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('raw HTTP/2: a request reset mid-body, then more calls on the connection', async () => {
    const session = await h2connect(sd.sock);
    try {
      const msg = serialize('RuntimeService', 'ExecSync', { container_id: ctr, cmd: ['true'] });
      await rawCall(session, `${RT}ExecSync`, lpm(msg).subarray(0, 6), { rstAfterMs: 50 });
      const ok = await rawCall(session, `${RT}ExecSync`, lpm(msg));
      assert.equal(grpcStatus(ok).code, S.OK);
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('unknown method or service: UNIMPLEMENTED', async () => {
    for (const m of [`${RT}NoSuchMethod`, '/runtime.v1alpha2.RuntimeService/Version',
      `${IMG}PushImage`, '/', `${RT}`]) {
      const { err } = await unaryRaw(sd.endpoint, m);
      assert.equal(err?.code, S.UNIMPLEMENTED, `${m}: ${err}`);
    }
    await stillServing();
  });

  test('truncated or malformed protobuf: INVALID_ARGUMENT', async () => {
    const session = await h2connect(sd.sock);
    try {
      const full = serialize('RuntimeService', 'ExecSync', { container_id: ctr, cmd: ['echo', 'x'] });
      const cases = [
        [`${RT}ExecSync`, full.subarray(0, full.length - 1)], // the last string cut
        [`${RT}RunPodSandbox`, Buffer.from([0x0a, 0x7f, 0x0a, 0x02])], // config: 127 bytes, 2 there
        [`${RT}CreateContainer`, Buffer.from([0x0a, 0x05, 0x61])],
        [`${RT}ContainerStatus`, Buffer.from([0x08])], // a varint tag, no value
        [`${RT}Exec`, Buffer.from([0x0b])], // wire type 3 (start group)
        [`${IMG}PullImage`, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])],
      ];
      for (const [m, payload] of cases) {
        const st = grpcStatus(await rawCall(session, m, lpm(payload)));
        assert.equal(st.code, S.INVALID_ARGUMENT, `${m} ${payload.toString('hex')}: ${JSON.stringify(st)}`);
      }
    } finally {
      session.close();
    }
    await stillServing();
  });

  // A config field this build does not declare (a newer kubelet's) is refused
  // by its number and path, never decoded and dropped.
  test('an undeclared field inside a pod or container config: INVALID_ARGUMENT naming it', async () => {
    const session = await h2connect(sd.sock);
    try {
      const unknown99 = Buffer.from([0x98, 0x06, 0x01]); // varint field 99 = 1
      const ctrReq = serialize('RuntimeService', 'CreateContainer', {
        pod_sandbox_id: pod.id,
        config: { ...sd.ctrConfig('u', { command: ['true'] }), linux: { security_context: {} } },
        sandbox_config: pod.config,
      });
      // config (2) . linux (15) . security_context (2) gets field 99
      let st = grpcStatus(await rawCall(session, `${RT}CreateContainer`,
        lpm(appendField(ctrReq, [2, 15, 2], unknown99))));
      assert.equal(st.code, S.INVALID_ARGUMENT, JSON.stringify(st));
      assert.match(st.message,
        /config\.linux\.security_context: field 99 of runtime\.v1\.LinuxContainerSecurityContext/);
      const podReq = serialize('RuntimeService', 'RunPodSandbox',
        { config: sd.podConfig('unk', { hostNetwork: true }) });
      st = grpcStatus(await rawCall(session, `${RT}RunPodSandbox`, lpm(appendField(podReq, [1], unknown99))));
      assert.equal(st.code, S.INVALID_ARGUMENT, JSON.stringify(st));
      assert.match(st.message, /^config: field 99 of runtime\.v1\.PodSandboxConfig/);
    } finally {
      session.close();
    }
    const pods = await sd.rt.ListPodSandbox({});
    assert.ok(!pods.items.some((p) => p.metadata.name === 'unk'), 'the refused pod was not created');
    await stillServing();
  });

  test('unknown pod or container ids: NOT_FOUND on status, start, exec, attach, port-forward',
    async () => {
      const rt = sd.rt;
      await rejectsWith(rt.PodSandboxStatus({ pod_sandbox_id: NOPE }), S.NOT_FOUND, new RegExp(NOPE));
      await rejectsWith(rt.ContainerStatus({ container_id: NOPE }), S.NOT_FOUND, new RegExp(NOPE));
      await rejectsWith(rt.StartContainer({ container_id: NOPE }), S.NOT_FOUND);
      await rejectsWith(rt.ExecSync({ container_id: NOPE, cmd: ['true'] }), S.NOT_FOUND);
      await rejectsWith(rt.Exec({ container_id: NOPE, cmd: ['true'], stdout: true }), S.NOT_FOUND);
      await rejectsWith(rt.Attach({ container_id: NOPE, stdout: true }), S.NOT_FOUND);
      await rejectsWith(rt.ReopenContainerLog({ container_id: NOPE }), S.NOT_FOUND);
      await rejectsWith(rt.PortForward({ pod_sandbox_id: NOPE }), S.NOT_FOUND);
      await rejectsWith(rt.CreateContainer({ pod_sandbox_id: NOPE,
        config: sd.ctrConfig('x', { command: ['true'] }), sandbox_config: pod.config }), S.NOT_FOUND);
      await stillServing();
    });

  test('unknown ids: remove and stop of a pod, stop and remove of a container are OK', async () => {
    await sd.rt.StopContainer({ container_id: NOPE, timeout: 1 }); // critest's idempotence rule
    await sd.rt.RemoveContainer({ container_id: NOPE });
    await sd.rt.StopPodSandbox({ pod_sandbox_id: NOPE });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: NOPE });
    await sd.img.RemoveImage({ image: { image: 'localhost/never/there:1' } });
    await stillServing();
  });

  test('Exec/Attach: the kubelet library\'s validation texts, INVALID_ARGUMENT', async () => {
    const rt = sd.rt;
    const tty = /tty and stderr cannot both be true/;
    await rejectsWith(rt.Exec({ container_id: ctr, cmd: ['sh'], tty: true, stdin: true, stderr: true }),
      S.INVALID_ARGUMENT, tty);
    await rejectsWith(rt.Attach({ container_id: ctr, tty: true, stdout: true, stderr: true }),
      S.INVALID_ARGUMENT, tty);
    await rejectsWith(rt.Exec({ container_id: ctr, cmd: ['true'] }), S.INVALID_ARGUMENT,
      /one of stdin, stdout, or stderr must be set/);
    await rejectsWith(rt.Attach({ container_id: ctr }), S.INVALID_ARGUMENT,
      /one of stdin, stdout, and stderr must be set/);
    await rejectsWith(rt.Exec({ container_id: '', cmd: ['true'], stdout: true }), S.INVALID_ARGUMENT,
      /missing required container_id/);
    await rejectsWith(rt.PortForward({ pod_sandbox_id: '' }), S.INVALID_ARGUMENT,
      /missing required pod_sandbox_id/);
    for (const port of [0, -1, 65536])
      await rejectsWith(rt.PortForward({ pod_sandbox_id: pod.id, port: [port] }), S.INVALID_ARGUMENT);
    // more ports than a session carries: refused by name, never cut silently
    const many = Array.from({ length: 129 }, (_, i) => 1000 + i);
    await rejectsWith(rt.PortForward({ pod_sandbox_id: pod.id, port: many }), S.INVALID_ARGUMENT,
      /^port: 129 ports, at most 128$/);
    const url = await rt.PortForward({ pod_sandbox_id: pod.id, port: many.slice(0, 128) });
    assert.match(url.url, /\/portforward\//);
    await stillServing();
  });

  test('missing metadata and other invalid requests: INVALID_ARGUMENT', async () => {
    const rt = sd.rt;
    const good = sd.podConfig('fine', { hostNetwork: true });
    await rejectsWith(rt.RunPodSandbox({}), S.INVALID_ARGUMENT);
    await rejectsWith(rt.RunPodSandbox({ config: { ...good, metadata: null } }), S.INVALID_ARGUMENT,
      /metadata/);
    await rejectsWith(rt.RunPodSandbox({ config: { ...good, metadata: { name: 'x', namespace: 'y' } } }),
      S.INVALID_ARGUMENT, /uid/);
    await rejectsWith(rt.RunPodSandbox({ config: good, runtime_handler: 'kata' }), S.INVALID_ARGUMENT,
      /kata/);
    const cfg = sd.ctrConfig('c', { command: ['true'] });
    await rejectsWith(rt.CreateContainer({ pod_sandbox_id: pod.id, config: { ...cfg, metadata: null },
      sandbox_config: pod.config }), S.INVALID_ARGUMENT, /metadata/);
    await rejectsWith(rt.CreateContainer({ pod_sandbox_id: pod.id, config: { ...cfg, image: null },
      sandbox_config: pod.config }), S.INVALID_ARGUMENT, /image/);
    await rejectsWith(rt.CreateContainer({ pod_sandbox_id: pod.id, sandbox_config: pod.config }),
      S.INVALID_ARGUMENT);
    await rejectsWith(rt.CreateContainer({ pod_sandbox_id: pod.id,
      config: { ...cfg, image: { image: 'localhost/absent:9' } }, sandbox_config: pod.config }),
    S.NOT_FOUND, /localhost\/absent:9/);
    await rejectsWith(rt.ExecSync({ container_id: ctr, cmd: [] }), S.INVALID_ARGUMENT);
    // nothing half-made was left listed
    assert.deepEqual((await rt.ListPodSandbox({})).items.map((p) => p.id), [pod.id]);
    assert.equal((await rt.ListContainers({})).containers.length, 2);
    await stillServing();
  });

  test('a container that is not running: exec, attach, ExecSync refused', async () => {
    const rt = sd.rt;
    await rejectsWith(rt.ExecSync({ container_id: created, cmd: ['true'] }), S.FAILED_PRECONDITION);
    await rejectsWith(rt.Exec({ container_id: created, cmd: ['true'], stdout: true }),
      S.FAILED_PRECONDITION);
    await rejectsWith(rt.Attach({ container_id: created, stdout: true }), S.FAILED_PRECONDITION);
    await stillServing();
  });

  test('many bad calls at once on several connections', async () => {
    const clients = [];
    for (let i = 0; i < 4; i++) clients.push(await connectCri(sd.endpoint));
    const calls = [];
    for (const c of clients) {
      for (let i = 0; i < 25; i++) {
        calls.push(c.runtime.ContainerStatus({ container_id: NOPE }).then(() => 'ok', (e) => e.code));
        calls.push(c.runtime.Exec({ container_id: ctr, cmd: ['x'], tty: true, stderr: true })
          .then(() => 'ok', (e) => e.code));
      }
    }
    const codes = await Promise.all(calls);
    for (const c of clients) c.close();
    assert.equal(codes.filter((x) => x === S.NOT_FOUND).length, 100);
    assert.equal(codes.filter((x) => x === S.INVALID_ARGUMENT).length, 100);
    await stillServing();
  });

  describe('invalid configuration: non-zero exit naming the key', () => {
    // Safe dirs first (a case that wrongly starts must not touch /run or
    // /var/lib), then the case's own arguments, which win.
    const run = (args) => spawnSync(SLUICED, [
      '--listen', `unix://${path.join(sd.root, 'cfg', 'x.sock')}`, '--stream-port', '0',
      '--state-dir', path.join(sd.root, 'cfg', 'state'), '--run-dir', path.join(sd.root, 'cfg', 'run'),
      '--cni-conf-dir', sd.cniDir, ...args,
    ], { encoding: 'utf8', timeout: 10000 });
    const cfgFile = (name, text) => {
      const f = path.join(sd.root, name);
      fs.writeFileSync(f, text);
      return f;
    };
    const cases = [
      ['an unknown flag', () => ['--frobnicate', '1'], /--frobnicate/],
      ['a flag without its value', () => ['--state-dir'], /--state-dir/],
      ['a bad number', () => ['--stream-port', 'http'], /--stream-port/],
      ['a number out of range', () => ['--token-ttl-ms', '0'], /--token-ttl-ms/],
      ['a SPDY window below the SPDY default', () => ['--spdy-initial-window', '65535'],
        /--spdy-initial-window: 65535 is out of range \(65536\.\.2147483647\)/],
      ['a SPDY data frame limit above 2^24-1',
        () => ['--config', cfgFile('frame.json', '{"spdy-max-data-frame": 16777216}')],
        /spdy-max-data-frame/],
      ['a listen backlog of 0', () => ['--stream-listen-backlog', '0'], /--stream-listen-backlog/],
      ['a relative path', () => ['--state-dir', 'relative/dir'], /--state-dir/],
      ['a non-unix listen address', () => ['--listen', 'tcp://127.0.0.1:1'], /--listen/],
      ['a config file with an unknown key',
        () => ['--config', cfgFile('unknown.json', '{"stream-port": 0, "bogus-key": 1}')], /bogus-key/],
      ['a config file with a wrong type',
        () => ['--config', cfgFile('type.json', '{"max-sessions": "many"}')], /max-sessions/],
      ['a config file with a negative number',
        () => ['--config', cfgFile('neg.json', '{"stream-port": -1}')], /stream-port/],
      ['malformed JSON', () => ['--config', cfgFile('broken.json', '{"stream-port": 0,')],
        /broken\.json/],
      ['a config file that is not an object', () => ['--config', cfgFile('arr.json', '[1]')],
        /arr\.json/],
      ['a missing config file', () => ['--config', path.join(sd.root, 'absent.json')], /absent\.json/],
    ];
    for (const [what, args, re] of cases) {
      test(what, async () => {
        const r = run(args());
        assert.notEqual(r.status, 0, `${what}: exit ${r.status}`);
        assert.equal(r.signal, null, `${what}: killed by ${r.signal}`);
        assert.match(r.stderr, re, `${what}: ${r.stderr}`);
        assert.doesNotMatch(r.stdout, /streaming on/);
        await stillServing();
      });
    }
  });

  test('SIGTERM: exit 0, sanitizer-clean, nothing left behind', async () => {
    await sd.stop();
  });
});
