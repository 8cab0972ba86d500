// sluiced's CRI gRPC server against independent peers: @grpc/grpc-js (the
// CRI schema from proto/api.proto) and raw HTTP/2 from Node's http2 module
// for requests a gRPC library will not produce. After each bad request the
// daemon must keep serving. Also the daemon's own life: stale socket,
// socket mode, --help, bad flags, SIGTERM (exit 0, socket removed,
// sanitizer-clean).
//
// The binary comes from $SLUICED, else <repo>/build/src/sluiced/sluiced.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, loadCriPackage, status as S } from './lib/cri.mjs';
import {
  SANITIZER_MARKS, SLUICED, SluicedProc, grpcStatus, h2connect, lpm, rawCall, serialize, unaryRaw,
} from './lib/sluiced.mjs';

const START_TIMEOUT_MS = 15000;
const MAX_RECV = 65536;
const RT = '/runtime.v1.RuntimeService/';

async function tempDirs() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'sluiced-grpc-'));
  const d = {
    root,
    sock: path.join(root, 'run', 'sluice.sock'),
    cni: path.join(root, 'cni'),
  };
  await mkdir(d.cni, { recursive: true });
  return d;
}

function daemonArgs(d) {
  return [
    '--listen', `unix://${d.sock}`, '--stream-port', '0',
    '--state-dir', path.join(d.root, 'state'), '--run-dir', path.join(d.root, 'run'),
    '--cni-conf-dir', d.cni, '--max-recv-message', String(MAX_RECV),
  ];
}

async function startSluiced(args) {
  if (!existsSync(SLUICED)) throw new Error(`no sluiced at ${SLUICED} (build it, or set SLUICED)`);
  const s = new SluicedProc(spawn(SLUICED, args, { stdio: ['ignore', 'pipe', 'pipe'] }), null);
  await s.waitBanner();
  return s;
}

function versionRequestBytes(version) {
  return serialize('RuntimeService', 'Version', { version });
}

// ---- the suite ----------------------------------------------------------------

describe('sluiced gRPC', () => {
  let d;
  let s;
  let cri;
  before(async () => {
    d = await tempDirs();
    s = await startSluiced(daemonArgs(d));
    cri = await connectCri(s.endpoint);
  });
  after(async () => {
    cri?.close();
    if (s && !s.exited) s.proc.kill('SIGKILL');
    if (d) await rm(d.root, { recursive: true, force: true });
  });

  // The daemon still answers a fresh connection.
  async function stillServing() {
    s.assertAlive();
    const c = await connectCri(s.endpoint);
    try {
      const v = await c.runtime.Version({ version: '' });
      assert.equal(v.runtime_name, 'sluice');
    } finally {
      c.close();
    }
  }

  test('the CRI socket exists with mode 0660', () => {
    assert.equal(s.endpoint, `unix://${d.sock}`);
    const st = statSync(d.sock);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o660);
  });

  test('Version: every field non-empty (cri-client checks them)', async () => {
    const v = await cri.runtime.Version({ version: 'v1' }, { deadlineMs: 5000 });
    assert.equal(v.version, '0.1.0');
    assert.equal(v.runtime_name, 'sluice');
    assert.match(v.runtime_version, /^\d+\.\d+\.\d+/);
    assert.equal(v.runtime_api_version, 'v1');
  });

  test('Status: RuntimeReady; NetworkReady follows the CNI config dir', async () => {
    const cond = (r, type) => r.status.conditions.find((c) => c.type === type);
    let r = await cri.runtime.Status({ verbose: false });
    assert.equal(cond(r, 'RuntimeReady').status, true);
    const net0 = cond(r, 'NetworkReady');
    assert.equal(net0.status, false);
    assert.equal(net0.reason, 'NetworkPluginNotReady');
    assert.ok(net0.message.includes(d.cni), net0.message);
    await writeFile(path.join(d.cni, '10-test.conflist'), '{"cniVersion":"1.0.0"}');
    r = await cri.runtime.Status({ verbose: false });
    assert.equal(cond(r, 'NetworkReady').status, true);
    assert.equal(cond(r, 'RuntimeReady').status, true);
  });

  test('an unknown method is UNIMPLEMENTED', async () => {
    const { err } = await unaryRaw(s.endpoint, `${RT}NoSuchMethod`);
    assert.equal(err?.code, S.UNIMPLEMENTED, String(err));
    assert.match(err.details, /unknown method/);
    const r2 = await unaryRaw(s.endpoint, '/no.such.Service/Version');
    assert.equal(r2.err?.code, S.UNIMPLEMENTED);
    await stillServing();
  });

  // (the generic path, a table entry without a handler, is in test_grpc_server.c)
  test('a known CRI method sluice does not serve is UNIMPLEMENTED, saying so', async () => {
    for (const m of ['CheckpointContainer']) {
      const { err } = await unaryRaw(s.endpoint, `${RT}${m}`);
      assert.equal(err?.code, S.UNIMPLEMENTED, `${m}: ${err}`);
      assert.match(err.details, /not implemented/);
    }
  });

  test('deadlines: grpc-js sends grpc-timeout and gets its answer in time', async () => {
    const v = await cri.runtime.Version({ version: '' }, { deadlineMs: 250 });
    assert.equal(v.runtime_api_version, 'v1');
  });

  test('deadlines: a request still arriving at its deadline gets DEADLINE_EXCEEDED', async () => {
    const session = await h2connect(d.sock);
    try {
      const t0 = Date.now();
      // A prefix announcing 100 bytes, the rest never sent.
      const prefix = Buffer.from([0, 0, 0, 0, 100]);
      const r = await rawCall(session, `${RT}Version`, prefix,
        { headers: { 'grpc-timeout': '200m' }, keepOpen: true });
      const took = Date.now() - t0;
      assert.equal(grpcStatus(r).code, S.DEADLINE_EXCEEDED, JSON.stringify(r));
      assert.ok(took >= 190 && took < 5000, `answered after ${took} ms`);
      // The same connection keeps working.
      const ok = await rawCall(session, `${RT}Version`, lpm(versionRequestBytes('')));
      assert.equal(grpcStatus(ok).code, S.OK);
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('a malformed grpc-timeout is INTERNAL', async () => {
    const session = await h2connect(d.sock);
    try {
      const r = await rawCall(session, `${RT}Version`, lpm(Buffer.alloc(0)),
        { headers: { 'grpc-timeout': '123456789S' } });
      assert.equal(grpcStatus(r).code, S.INTERNAL);
    } finally {
      session.close();
    }
  });

  test('raw HTTP/2: a plain call answers HEADERS, one message, trailers', async () => {
    const session = await h2connect(d.sock);
    try {
      const r = await rawCall(session, `${RT}Version`, lpm(versionRequestBytes('')));
      assert.equal(r.http, 200);
      assert.equal(r.headers['content-type'], 'application/grpc');
      assert.equal(r.headers['grpc-status'], undefined); // not Trailers-Only
      assert.equal(r.trailers['grpc-status'], '0');
      assert.equal(r.data[0], 0);
      assert.equal(r.data.readUInt32BE(1), r.data.length - 5);
      const v = loadCriPackage().RuntimeService.service.Version.responseDeserialize(
        r.data.subarray(5));
      assert.equal(v.runtime_name, 'sluice');
    } finally {
      session.close();
    }
  });

  test('raw HTTP/2: malformed gRPC frames', async () => {
    const session = await h2connect(d.sock);
    try {
      const payload = versionRequestBytes('x');
      const cases = [
        [lpm(payload, 1), S.UNIMPLEMENTED, /compression not supported/],
        [lpm(payload, 7), S.INTERNAL, /compressed flag 7/],
        [Buffer.from([0, 0, 0]), S.INTERNAL, /request ended inside a message/],
        [lpm(payload).subarray(0, 7), S.INTERNAL, /request ended inside a message/],
        [Buffer.concat([lpm(payload), lpm(payload)]), S.INTERNAL, /more than one/],
        [Buffer.alloc(0), S.INTERNAL, /no request message/],
      ];
      for (const [body, code, re] of cases) {
        const r = await rawCall(session, `${RT}Version`, body);
        const st = grpcStatus(r);
        assert.equal(st.code, code, `${body.toString('hex')}: ${JSON.stringify(st)}`);
        assert.match(st.message, re);
        assert.equal(r.http, 200);
      }
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('raw HTTP/2: a truncated protobuf is INVALID_ARGUMENT', async () => {
    const session = await h2connect(d.sock);
    try {
      // Field 1 (version), length 10, 3 bytes present.
      const r = await rawCall(session, `${RT}Version`, lpm(Buffer.from([0x0a, 10, 0x61, 0x62, 0x63])));
      const st = grpcStatus(r);
      assert.equal(st.code, S.INVALID_ARGUMENT, JSON.stringify(st));
      assert.match(st.message, /runtime\.v1\.VersionRequest/);
      const r2 = await rawCall(session, `${RT}Status`, lpm(Buffer.from([0xff])));
      assert.equal(grpcStatus(r2).code, S.INVALID_ARGUMENT);
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('raw HTTP/2: a wrong content-type is HTTP 415', async () => {
    const session = await h2connect(d.sock);
    try {
      const r = await rawCall(session, `${RT}Version`, lpm(Buffer.alloc(0)),
        { headers: { 'content-type': 'application/json' } });
      assert.equal(r.http, 415);
      assert.equal(grpcStatus(r).code, S.INVALID_ARGUMENT);
      const r2 = await rawCall(session, `${RT}Version`, lpm(Buffer.alloc(0)),
        { headers: { 'content-type': 'application/grpc+proto' } });
      assert.equal(r2.http, 200);
      assert.equal(grpcStatus(r2).code, S.OK);
    } finally {
      session.close();
    }
    await stillServing();
  });

  test('a message over --max-recv-message is RESOURCE_EXHAUSTED', async () => {
    const big = 'x'.repeat(MAX_RECV + 10);
    await assert.rejects(cri.runtime.Version({ version: big }), (e) => {
      assert.equal(e.code, S.RESOURCE_EXHAUSTED, String(e));
      assert.match(e.details, /larger than max/);
      return true;
    });
    await stillServing();
  });

  test('many concurrent calls on one connection and on several', async () => {
    const calls = [];
    for (let i = 0; i < 200; i++) calls.push(cri.runtime.Version({ version: String(i) }));
    const clients = [];
    for (let i = 0; i < 8; i++) clients.push(await connectCri(s.endpoint));
    for (const c of clients)
      for (let i = 0; i < 20; i++) calls.push(c.runtime.Status({ verbose: false }));
    const res = await Promise.all(calls);
    assert.equal(res.length, 360);
    for (const c of clients) c.close();
  });

  test('raw HTTP/2: a client that vanishes mid-request does not hurt', async () => {
    const sock = net.connect(d.sock);
    await new Promise((resolve) => sock.once('connect', resolve));
    sock.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    sock.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])); // empty SETTINGS
    sock.destroy();
    const bad = net.connect(d.sock);
    await new Promise((resolve) => bad.once('connect', resolve));
    bad.resume(); // read until the server closes (it answers with SETTINGS first)
    bad.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => bad.once('close', resolve));
    await stillServing();
  });

  test('SIGTERM: exit 0 and the socket file is gone; an idle connection whose peer does not ' +
    'read (a pooled synchronous client) is closed, not waited for', async () => {
    cri.close();
    cri = null;
    // A client that made one call and now holds its connection idle
    // without reading it, as a pool of blocking clients does.
    const idle = net.connect(d.sock);
    await new Promise((resolve) => idle.once('connect', resolve));
    const settings = new Promise((resolve) => idle.once('data', resolve));
    idle.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
      Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    await settings;
    idle.pause();
    let peerClosed = false;
    idle.on('close', () => { peerClosed = true; });
    await s.stop();
    assert.ok(!existsSync(d.sock), 'socket file left behind');
    assert.ok(!peerClosed, 'the test peer closed its end itself');
    assert.doesNotMatch(s.stderr, /did not close after our GOAWAY/,
      'sluiced waited for the idle peer until its cut-off');
    idle.destroy();
  });
});

describe('sluiced start-up', () => {
  let d;
  before(async () => { d = await tempDirs(); });
  after(async () => { if (d) await rm(d.root, { recursive: true, force: true }); });

  test('--help documents every key and exits 0', () => {
    const r = spawnSync(SLUICED, ['--help'], { encoding: 'utf8' });
    assert.equal(r.status, 0);
    for (const k of ['--config', '--listen', '--stream-port', '--max-recv-message',
      '--cni-conf-dir', '--runtime-path', '--import-dir'])
      assert.ok(r.stdout.includes(k), `--help lacks ${k}`);
  });

  test('a bad value exits 2 naming the key', () => {
    const r = spawnSync(SLUICED, ['--stream-port', 'http'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--stream-port/);
    const r2 = spawnSync(SLUICED, ['--bogus', '1'], { encoding: 'utf8' });
    assert.equal(r2.status, 2);
    assert.match(r2.stderr, /--bogus/);
  });

  test('a config file works and flags override it', async () => {
    const file = path.join(d.root, 'sluiced.json');
    await writeFile(file, JSON.stringify({
      listen: 'unix:///nonexistent/overridden.sock',
      'cni-conf-dir': d.cni, 'stream-port': 0,
    }));
    const args = ['--config', file, '--listen', `unix://${d.sock}`,
      '--state-dir', path.join(d.root, 'state'), '--run-dir', path.join(d.root, 'run')];
    const s = await startSluiced(args);
    try {
      assert.equal(s.endpoint, `unix://${d.sock}`);
      const c = await connectCri(s.endpoint);
      const v = await c.runtime.Version({ version: '' });
      assert.equal(v.runtime_name, 'sluice');
      c.close();
    } finally {
      await s.stop();
    }
    await writeFile(file, JSON.stringify({ 'max-sessions': 'many' }));
    const r = spawnSync(SLUICED, ['--config', file], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /max-sessions/);
  });

  test('a stale socket from a killed daemon is replaced', async () => {
    const first = await startSluiced(daemonArgs(d));
    first.proc.kill('SIGKILL');
    await first.exitPromise;
    assert.ok(existsSync(d.sock), 'SIGKILL should leave the socket file');
    const second = await startSluiced(daemonArgs(d));
    try {
      const c = await connectCri(second.endpoint);
      assert.equal((await c.runtime.Version({ version: '' })).runtime_api_version, 'v1');
      c.close();
    } finally {
      await second.stop();
    }
  });

  test('a non-socket file at the socket path is an error', async () => {
    await mkdir(path.dirname(d.sock), { recursive: true });
    await writeFile(d.sock, 'not a socket');
    const r = spawnSync(SLUICED, daemonArgs(d), { encoding: 'utf8', timeout: START_TIMEOUT_MS });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /is not a socket/);
    const mark = SANITIZER_MARKS.find((m) => r.stderr.includes(m));
    assert.ok(!mark, `sanitizer report after a failed start: ${r.stderr}`);
    await rm(d.sock);
  });
});
