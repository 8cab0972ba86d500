// The CRI socket under a flood of idle connections, the way critest leaves
// them (two per spec, never closed) and worse: 1,000 raw unix connections,
// half completing the HTTP/2 preface and SETTINGS exchange, half sending
// nothing. A new @grpc/grpc-js client must still get its Version answered
// at once, with the default limit (4096: all are kept) and with a limit of
// 100 (the longest-idle connections are closed with GOAWAY to make room,
// never the new client accepted and dropped). When every connection has a
// call in progress the new one gets a GOAWAY saying why. Idle connections
// are closed after grpc-idle-timeout-ms; one with an open event stream is
// not idle. containerd 1.6 (grpc-go, no limit) gets the same flood.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connectCri, status as S } from './lib/cri.mjs';
import { SluicedInstance, destroyAll, skipReason, sleep } from './lib/sluiced.mjs';

const skip = skipReason();
const FLOOD = 1000;
const PROBES = 5;
// A fresh client's connect + Version, PROBES tries each time. The target
// is 100 ms; most of that time is the client's own (grpc-js channel set-up)
// and this 2-core machine is shared with other suites, so the bound is
// relative to the same probe on the same daemon just before the flood:
// the median under the flood must stay under max(100 ms, 2 x that
// baseline), and no try may take 1 s (the old lockout lasted 45 s+).
const TARGET_MS = 100;
const WORST_MS = 1000;
const WAIT_MS = 20000;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CD_SCRIPT = path.join(REPO, 'scripts/containerd');
const CD_DIR = '/run/sluice-test/containerd-grpc';
const CD_STREAM_PORT = '10117';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_SETTINGS = 4;
const FRAME_GOAWAY = 7;

function frame(type, flags, payload = Buffer.alloc(0)) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  return Buffer.concat([h, payload]);
}

// A raw connection. preface: send the client preface and SETTINGS at
// connect; else it never writes a byte. Records the server's frames and
// its EOF. It does not ACK the server's SETTINGS: a later write can meet
// a connection already closed to make room, and node then drops the
// unread GOAWAY with the socket (seen once under load), so the check
// "every close comes with a GOAWAY" could not see it.
function rawConn(sock, { preface }) {
  return new Promise((resolve, reject) => {
    const c = { frames: [], eof: false, buf: Buffer.alloc(0) };
    c.sock = net.connect(sock, () => {
      if (preface) c.sock.write(Buffer.concat([PREFACE, frame(FRAME_SETTINGS, 0)]));
      resolve(c);
    });
    c.sock.on('error', (e) => {
      if (!c.sock.connecting) c.error = e;
      else reject(e);
    });
    c.sock.on('close', () => { c.eof = true; });
    c.sock.on('data', (d) => {
      c.buf = Buffer.concat([c.buf, d]);
      while (c.buf.length >= 9 && c.buf.length >= 9 + c.buf.readUIntBE(0, 3)) {
        const len = c.buf.readUIntBE(0, 3);
        const f = { type: c.buf[3], flags: c.buf[4], payload: c.buf.subarray(9, 9 + len) };
        c.buf = c.buf.subarray(9 + len);
        c.frames.push(f);
      }
    });
  });
}

function goaway(c) {
  const f = c.frames.find((x) => x.type === FRAME_GOAWAY);
  if (!f) return null;
  return { code: f.payload.readUInt32BE(4), debug: f.payload.subarray(8).toString() };
}

async function flood(sock, n = FLOOD) {
  const conns = [];
  // In batches, so the flood itself does not stall on node's side.
  for (let i = 0; i < n; i += 100) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 100); j++) batch.push(rawConn(sock, { preface: j % 2 === 0 }));
    conns.push(...(await Promise.all(batch)));
  }
  return conns;
}

function closeAll(conns) {
  for (const c of conns) c.sock.destroy();
}

// sluiced's sockets: the connections (and listeners). Not all its fds:
// the start-up import of the import directory opens and closes files
// meanwhile (off the loop), which would move a count of every fd.
function socketCount(pid) {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

async function waitUntil(pred, what, ms = WAIT_MS) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

// PROBES fresh clients, each on a connection of its own: connect + Version.
async function probe(endpoint, label) {
  const times = [];
  for (let i = 0; i < PROBES; i++) {
    const t = performance.now();
    const c = await connectCri(endpoint, { ownConnection: true });
    try {
      const v = await c.runtime.Version({ version: '' }, { deadlineMs: 5000 });
      assert.ok(v.runtime_name);
    } finally {
      c.close();
    }
    times.push(performance.now() - t);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(PROBES / 2)];
  console.log(`${label}: connect + Version ${times.map((x) => x.toFixed(1)).join(', ')} ms ` +
    `(median ${median.toFixed(1)})`);
  return { times, median, max: sorted.at(-1) };
}

function assertFast(p, base) {
  const bound = Math.max(TARGET_MS, 2 * base.median);
  assert.ok(p.median < bound, `median ${p.median} ms >= ${bound} ms (baseline ${base.median} ms)`);
  assert.ok(p.max < WORST_MS, `slowest ${p.max} ms >= ${WORST_MS} ms`);
}

describe('CRI socket flood, default limit', { skip }, () => {
  let sd;
  before(async () => { sd = await SluicedInstance.start({ label: 'flood' }); });
  after(() => destroyAll(sd));

  test(`${FLOOD} idle connections open: a new client is answered at once, all are kept`,
    async () => {
      const pid = sd.proc.proc.pid;
      const base = socketCount(pid);
      const quiet = await probe(sd.endpoint, 'sluiced, no flood');
      await waitUntil(() => socketCount(pid) <= base, 'the probes\' connections closed');
      const conns = await flood(sd.sock);
      await waitUntil(() => socketCount(pid) >= base + FLOOD, `${FLOOD} connections accepted`);
      const p = await probe(sd.endpoint, `sluiced, ${FLOOD} idle connections`);
      assertFast(p, quiet);
      await sleep(200);
      assert.equal(conns.filter((c) => c.eof).length, 0, 'no connection was closed');
      const settled = conns.filter((c, i) => i % 2 === 0);
      assert.ok(settled.every((c) => c.frames.some((f) => f.type === FRAME_SETTINGS)),
        'every preface got our SETTINGS');
      assert.equal((await sd.rt.Version({})).runtime_name, 'sluice');
      closeAll(conns);
      await waitUntil(() => socketCount(pid) <= base, 'sockets back');
    });

  test('sluiced exits 0 and sanitizer-clean', async () => {
    await sd.stop();
  });
});

describe('CRI socket flood over a limit of 100', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'flood100', args: ['--max-grpc-connections', '100'] });
  });
  after(() => destroyAll(sd));

  test('the longest-idle connections make room with a GOAWAY; new clients get in', async () => {
    const pid = sd.proc.proc.pid;
    const base = socketCount(pid);
    const quiet = await probe(sd.endpoint, 'sluiced (limit 100), no flood');
    await waitUntil(() => socketCount(pid) <= base, 'the probes\' connections closed');
    const conns = await flood(sd.sock);
    await waitUntil(() => conns.filter((c) => c.eof).length >= FLOOD - 100,
      `${FLOOD - 100} connections closed`);
    const p = await probe(sd.endpoint, `sluiced, limit 100 under a ${FLOOD} flood`);
    assertFast(p, quiet);
    const closed = conns.filter((c) => c.eof);
    // Oldest first: the first ones made room, the last 100 or so stay.
    // Longest idle first: all that stay open are from the last two
    // batches (a connection that completed its handshake later counts as
    // more recently active than a silent one accepted after it).
    const open = conns.filter((c) => !c.eof).length;
    assert.ok(open >= 95 && open <= 100, `${open} stay open`);
    assert.ok(conns.findIndex((c) => !c.eof) >= FLOOD - 200, 'the oldest were closed');
    // Those that spoke HTTP/2 were told why, none was reset.
    const spoke = closed.filter((c) => c.frames.length > 0);
    assert.ok(spoke.length >= (FLOOD - 100) / 2 - PROBES, `${spoke.length} got frames`);
    for (const c of spoke) {
      const g = goaway(c);
      assert.ok(g, 'a GOAWAY before the close');
      assert.equal(g.code, 0);
      assert.match(g.debug, /^closed to make room: 100 connections open \(the limit\)$/);
    }
    // Beyond SL_GRPC_MAX_LINGERING (64) at once, a connection closed to
    // make room is closed at once, not waiting for its peer. A client whose
    // preface meets the closed socket gets EPIPE or ECONNRESET, and node
    // then drops what it had not read yet (the GOAWAY went first, but the
    // test cannot see it there); every connection that ended without an
    // error got the GOAWAY.
    const errs = conns.filter((c) => c.error);
    assert.ok(errs.every((c) => ['EPIPE', 'ECONNRESET'].includes(c.error.code)),
      `socket errors: ${[...new Set(errs.map((c) => c.error.code))]}`);
    const silentClose = closed.filter((c) => !c.error && !goaway(c)).length;
    assert.equal(silentClose, 0, 'connections closed without a GOAWAY and without an error');
    await waitUntil(() => socketCount(pid) <= base + 100, 'lingering connections closed');
    // The daemon's own client was evicted too, if idle: it reconnects.
    assert.equal((await sd.rt.Version({})).runtime_name, 'sluice');
    console.log(`limit 100: ${closed.length} of ${FLOOD} closed by sluiced, ` +
      `${spoke.length} of them spoke HTTP/2 and got a GOAWAY (${errs.length} then a socket ` +
      `error on their next write); sluiced sockets ${base} -> ${socketCount(pid)}`);
    closeAll(conns);
  });

  test('sluiced exits 0 and sanitizer-clean', async () => {
    await sd.stop();
  });
});

describe('every connection busy', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'busy', args: ['--max-grpc-connections', '3'] });
  });
  after(() => destroyAll(sd));

  test('a new connection gets a GOAWAY saying why, and gets in once one is free', async () => {
    sd.cri.close(); // only our three below
    await sleep(200);
    const clients = [];
    const subs = [];
    for (let i = 0; i < 3; i++) {
      const c = await connectCri(sd.endpoint, { ownConnection: true });
      sd.clients.push(c);
      clients.push(c);
      subs.push(c.events()); // an open stream: busy
    }
    await Promise.all(subs.map((s) => s.ready));
    const raw = await rawConn(sd.sock, { preface: true });
    await waitUntil(() => raw.eof, 'the refused connection closed');
    assert.ok(raw.frames[0].type === FRAME_SETTINGS, 'our SETTINGS first');
    const g = goaway(raw);
    assert.equal(g.code, 7); // REFUSED_STREAM
    assert.equal(g.debug, 'sluiced: 3 connections open (the limit), each with a call in progress');
    assert.equal(raw.error, undefined, 'no reset');
    // grpc-js sees our SETTINGS, then the GOAWAY: its call fails.
    let late;
    try {
      const c = await connectCri(sd.endpoint, { ownConnection: true, connectTimeoutMs: 2000 });
      sd.clients.push(c);
      await c.runtime.Version({}, { deadlineMs: 2000 });
    } catch (e) {
      late = e;
    }
    assert.ok(late, 'no answer while every connection is busy');
    assert.match(sd.proc.stderr, /level=warn msg="CRI connection refused: every open connection has a call in progress" open=3 max_grpc_connections=3 refused_total=\d+/);
    for (const s of subs) assert.equal(s.status, null, 'the busy streams go on');
    // One subscriber leaves: its connection is idle and makes room.
    subs[0].cancel();
    await sleep(100);
    const c = await connectCri(sd.endpoint, { ownConnection: true });
    sd.clients.push(c);
    sd.cri = c; // for stop()
    sd.rt = c.runtime;
    assert.equal((await c.runtime.Version({})).runtime_name, 'sluice');
    const config = sd.podConfig('busy', { hostNetwork: true });
    const { pod_sandbox_id: pod } = await c.runtime.RunPodSandbox({ config });
    sd.podIds.add(pod);
    for (const s of subs.slice(1))
      await s.waitFor((e) => e.length >= 2, WAIT_MS, 'events on the busy connections');
    await c.runtime.RemovePodSandbox({ pod_sandbox_id: pod });
    for (const s of subs) s.cancel();
    console.log(`refused: GOAWAY ${g.code} "${g.debug}"; grpc-js: ${late.code} ${late.message}`);
  });

  test('sluiced exits 0 and sanitizer-clean', async () => {
    await sd.stop();
  });
});

describe('idle timeout', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'idle', args: ['--grpc-idle-timeout-ms', '500'] });
  });
  after(() => destroyAll(sd));

  test('idle connections are closed with GOAWAY; an event stream is not idle', async () => {
    const pid = sd.proc.proc.pid;
    const sub = sd.cri.events();
    await sub.ready;
    const base = socketCount(pid);
    const idle = await rawConn(sd.sock, { preface: true });
    const silent = await rawConn(sd.sock, { preface: false });
    const t = Date.now();
    await waitUntil(() => idle.eof && silent.eof, 'both idle connections closed', 5000);
    const took = Date.now() - t;
    assert.ok(took >= 400 && took < 3000, `closed after ${took} ms`);
    const g = goaway(idle);
    assert.equal(g.code, 0);
    assert.match(g.debug, /^idle for \d+ ms$/);
    await waitUntil(() => socketCount(pid) <= base, 'sockets back');
    // The subscriber's connection lived through several timeouts.
    await sleep(1500);
    assert.equal(sub.status, null);
    const pod = await sd.runPod('idle', { hostNetwork: true });
    await sub.waitFor((e) => e.length >= 2, WAIT_MS, 'events after 2 s');
    // A grpc-js client whose connection was closed while idle reconnects.
    const c = await connectCri(sd.endpoint, { ownConnection: true });
    sd.clients.push(c);
    await sleep(1500);
    assert.equal((await c.runtime.Version({})).runtime_name, 'sluice');
    c.close();
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    sub.cancel();
    console.log(`idle timeout 500 ms: raw connections closed after ${took} ms (${g.debug})`);
  });

  test('sluiced exits 0 and sanitizer-clean', async () => {
    await sd.stop();
  });
});

function containerdSkip() {
  if (process.getuid?.() !== 0) return 'containerd needs root';
  for (const c of ['containerd', 'runc'])
    if (spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0) return `${c} is not installed`;
  return false;
}

describe('containerd 1.6 (reference): the same flood', { skip: containerdSkip() }, () => {
  const env = { ...process.env, SLUICE_CONTAINERD_DIR: CD_DIR,
    SLUICE_CONTAINERD_STREAM_PORT: CD_STREAM_PORT };
  const sock = path.join(CD_DIR, 'containerd.sock');
  let startedHere = false;
  before(() => {
    if (spawnSync(CD_SCRIPT, ['status'], { env }).status !== 0) {
      const r = spawnSync(CD_SCRIPT, ['start'], { env, encoding: 'utf8', timeout: 180000 });
      assert.equal(r.status, 0, r.stderr);
      startedHere = true;
    }
  });
  after(() => {
    if (startedHere) spawnSync(CD_SCRIPT, ['stop', '--purge'], { env, stdio: 'ignore', timeout: 60000 });
  });

  test(`${FLOOD} idle connections open: a new client is answered at once`, async () => {
    const quiet = await probe(`unix://${sock}`, 'containerd, no flood');
    const conns = await flood(sock);
    await sleep(500);
    const p = await probe(`unix://${sock}`, `containerd, ${FLOOD} idle connections`);
    // Every probe was answered (5 s deadline) and the median meets the
    // same bound. (Its slowest try is reported, not judged: the reference
    // is not under test.)
    const bound = Math.max(TARGET_MS, 2 * quiet.median);
    assert.ok(p.median < bound, `median ${p.median} ms >= ${bound} ms`);
    assert.equal(conns.filter((c) => c.eof).length, 0, 'containerd closed none');
    closeAll(conns);
  });
});
