// Bad SPDY input on raw Node sockets after a real upgrade, with the exact
// frames the server must answer (lib/spdy/spdy_session.h "Peer errors",
// protocol notes §4, §5.1, §7.2). After every case a normal exec with the
// Go reference client (or, without go, a raw one) must still work on the
// same server. The stream-creation timeouts (--creation-timeout-ms, 10 s
// here, 30 s by default) run in the background while the other cases go on.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, afterEach, before, describe, test } from 'node:test';
import { sleep } from './lib/hostd.mjs';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { EXIT, goClientSkip, runGoClient } from './lib/goclient.mjs';
import { SUCCESS_JSON } from './lib/session.mjs';
import {
  Deflater, FLAG_FIN, GOAWAY, Inflater, RST, RawSpdy, TYPE, controlFrame, dataFrame, decodeNV,
  describeFrame, destroyAllPeers, encodeNV, goawayFrame, parseFrame, pingFrame, rstFrame,
  settingsFrame, synStreamFrame, windowUpdateFrame,
} from './lib/spdy.mjs';

const V4 = 'v4.channel.k8s.io';
const PF = 'portforward.k8s.io';
const SANDBOX = 'sb-spdy-bad';
// Short enough not to make the suite wait (the cases before the checks take
// less), long enough for every other case to create its streams under load.
const CREATION_TIMEOUT_MS = 10000;
const TIMEOUT_SLACK_MS = 8000;

const goSkip = goClientSkip();
const fx = serverFixture(['--creation-timeout-ms', String(CREATION_TIMEOUT_MS)]);
let echo;
let echoPort;

before(async () => {
  echo = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = echo.address().port;
});
// A failed case must not leave its connection to the final leak check;
// the background (creation-timeout) peers are untracked.
afterEach(() => destroyAllPeers());
after(() => echo?.close());

const u32 = (v) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};

async function execUrl(cmd = ['sh', '-c', 'echo raw-out; echo raw-err >&2']) {
  const r = await fx.h.execRaw({ cmd, stdout: 1, stderr: 1 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.url;
}

async function pfUrl() {
  const r = await fx.h.admin(`/portforward?sandbox=${SANDBOX}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.url;
}

const execPeer = async () => RawSpdy.connect(await execUrl(), { protocols: [V4] });
const pfPeer = async () => RawSpdy.connect(await pfUrl(), { protocols: [PF] });

// Opens a stream and waits for its SYN_REPLY, which must be the next frame.
async function openReplied(peer, headers, opts) {
  const id = await peer.synStream(headers, opts);
  const f = await peer.expect({ type: TYPE.SYN_REPLY, streamId: id, flags: 0 });
  assert.deepEqual(f.headers, [], 'Kubernetes replies with empty headers');
  return id;
}

// Creates error, stdout, stderr (what execUrl() asked for) and runs the
// exec to its end on this session: output, Success status, GOAWAY(OK).
async function rawExecCompletes(peer, { already = [] } = {}) {
  const ids = {};
  for (const t of ['error', 'stdout', 'stderr'])
    ids[t] = await openReplied(peer, [['streamtype', t]]);
  await peer.until((p) => p.goaway, 10000, 'the session end');
  assert.equal(peer.stream(ids.stdout).data.toString(), 'raw-out\n');
  assert.equal(peer.stream(ids.stderr).data.toString(), 'raw-err\n');
  assert.equal(peer.stream(ids.error).data.toString(), SUCCESS_JSON);
  assert.equal(peer.goaway.status, GOAWAY.OK);
  assert.equal(peer.goaway.lastGoodId, Math.max(ids.stderr, ...already));
  const rest = await peer.drainToClose();
  assert.deepEqual(rest.map(describeFrame), [], 'nothing after GOAWAY');
}

// The server still serves a normal exec: the Go client when available.
async function serverStillWorks() {
  fx.h.assertAlive();
  const url = await execUrl(['sh', '-c', 'echo still-ok; echo e >&2; exit 3']);
  if (!goSkip) {
    const r = await runGoClient(['exec', '-protocols', V4, url], { timeoutMs: 15000 });
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout.toString(), 'still-ok\n');
    assert.match(r.stderr, /^e\n/);
    return;
  }
  const peer = await RawSpdy.connect(url, { protocols: [V4] });
  const ids = {};
  for (const t of ['error', 'stdout', 'stderr']) ids[t] = await openReplied(peer, [['streamtype', t]]);
  await peer.until((p) => p.goaway, 10000, 'the session end');
  assert.equal(peer.stream(ids.stdout).data.toString(), 'still-ok\n');
  assert.match(peer.stream(ids.error).data.toString(), /"ExitCode","message":"3"/);
}

// The connection must yield exactly GOAWAY(lastGood, PROTOCOL_ERROR), then
// close.
async function expectFatal(peer, lastGood) {
  const frames = await peer.drainToClose(5000);
  assert.deepEqual(frames.map(describeFrame),
    [describeFrame({ control: true, type: TYPE.GOAWAY, typeName: 'GOAWAY', version: 3, flags: 0, length: 8, lastGoodId: lastGood, status: GOAWAY.PROTOCOL_ERROR })]);
}

// ---- background: stream-creation timeouts (CREATION_TIMEOUT_MS) ----

const timeouts = {};

function background(name, fn) {
  const t0 = Date.now();
  timeouts[name] = fn().then(
    (v) => ({ ok: true, v, ms: Date.now() - t0 }),
    (e) => ({ ok: false, e, ms: Date.now() - t0 }),
  );
}

const INTERNAL_TIMEOUT_JSON =
  '{"metadata":{},"status":"Failure","message":"Internal error occurred: error executing command in container: ' +
  'timed out waiting for client to create streams","reason":"InternalError","details":{"causes":[{"message":' +
  '"error executing command in container: timed out waiting for client to create streams"}]},"code":500}';
const WAIT = CREATION_TIMEOUT_MS + TIMEOUT_SLACK_MS;

test('creation timeouts: three clients that never finish their streams (checked at the end)', async () => {
  // exec, only the error stream: status on it, FIN, GOAWAY(1, OK), close.
  const a = await execPeer();
  a.untrack();
  await openReplied(a, [['streamtype', 'error']]);
  background('exec-error-only', () => a.drainToClose(WAIT));
  // exec, no stream at all: GOAWAY(0, OK), close.
  const b = await execPeer();
  b.untrack();
  background('exec-nothing', async () => (await b.drainToClose(WAIT)).map(describeFrame));
  // port-forward, an error stream without its data stream: the timeout
  // text on it, FIN; the session itself stays.
  const c = await pfPeer();
  c.untrack();
  const errId = await openReplied(c, [['streamtype', 'error'], ['port', String(echoPort)], ['requestid', '0']]);
  c.send(dataFrame(errId, Buffer.alloc(0), FLAG_FIN));
  background('pf-error-only', async () => {
    await c.until((p) => p.stream(errId).fin, WAIT, 'the pair timeout');
    const text = c.stream(errId).data.toString();
    await c.pingRoundTrip(1);
    const open = !c.isClosed;
    c.destroy();
    return { text, rst: c.stream(errId).rst, open, frames: c.log.map(describeFrame) };
  });
});

// ---- the raw helpers themselves, against the golden vectors (§4.4) ----

test('raw helpers: golden SPDY/3 vectors decode, and our first block matches spdystream\'s', async () => {
  const hex = (h) => Buffer.from(h.replace(/ /g, ''), 'hex');
  const cli = new Inflater();
  const srv = new Inflater();
  try {
    const syn1 = parseFrame(hex('80030001000000290000000100000000000078f9e3c6a7c262606060 04a7b392a2d4c45c6851c29a0a0a6800000000ffff'));
    const syn3 = parseFrame(hex('8003000100000019000000030000000000 00c22ac5565c92925f5a02000000ffff'));
    assert.deepEqual([syn1.typeName, syn1.streamId, syn3.streamId], ['SYN_STREAM', 1, 3]);
    assert.deepEqual(decodeNV(await cli.inflate(syn1.block)), [['streamtype', 'error']]);
    assert.deepEqual(decodeNV(await cli.inflate(syn3.block)), [['streamtype', 'stdout']]);
    const rep1 = parseFrame(hex('8003000200000014000000 0178f9e3c6a7c26260606000000000ffff'));
    const rep3 = parseFrame(hex('800300020000000c00000003026100000000ffff'));
    assert.deepEqual(decodeNV(await srv.inflate(rep1.block)), []);
    assert.deepEqual(decodeNV(await srv.inflate(rep3.block)), []);
    const d = new Deflater();
    const first = synStreamFrame(1, await d.compress(encodeNV([['streamtype', 'error']])));
    d.close();
    assert.deepEqual(first, syn1.raw);
    assert.deepEqual(rstFrame(5, RST.CANCEL), hex('80030003000000080000000500000005'));
    assert.deepEqual(pingFrame(1), hex('800300060000000400000001'));
    assert.deepEqual(goawayFrame(7, GOAWAY.OK), hex('8003000700000008000000070000 0000'));
    assert.deepEqual(dataFrame(3, Buffer.from('hi\n')), hex('0000000300000003 68690a'));
    assert.deepEqual(dataFrame(3, Buffer.alloc(0), FLAG_FIN), hex('0000000301000000'));
  } finally {
    cli.close();
    srv.close();
  }
});

// ---- malformed control frames: session errors ----

const FATAL = [
  ['RST_STREAM of length 4', () => controlFrame(TYPE.RST_STREAM, 0, u32(1))],
  ['RST_STREAM of length 12', () => controlFrame(TYPE.RST_STREAM, 0, Buffer.concat([u32(1), u32(5), u32(0)]))],
  ['RST_STREAM with status 0', () => rstFrame(1, 0)],
  ['RST_STREAM for stream 0', () => rstFrame(0, RST.CANCEL)],
  ['PING of length 8', () => controlFrame(TYPE.PING, 0, Buffer.concat([u32(1), u32(0)]))],
  ['PING of length 0', () => controlFrame(TYPE.PING, 0)],
  ['PING with id 0', () => pingFrame(0)],
  ['PING with flags 1', () => controlFrame(TYPE.PING, 1, u32(1))],
  ['GOAWAY of length 4', () => controlFrame(TYPE.GOAWAY, 0, u32(0))],
  ['GOAWAY of length 12', () => controlFrame(TYPE.GOAWAY, 0, Buffer.concat([u32(0), u32(0), u32(0)]))],
  ['GOAWAY with flags 1', () => controlFrame(TYPE.GOAWAY, 1, Buffer.concat([u32(0), u32(0)]))],
  ['WINDOW_UPDATE of length 4', () => controlFrame(TYPE.WINDOW_UPDATE, 0, u32(1))],
  ['WINDOW_UPDATE of length 12', () => controlFrame(TYPE.WINDOW_UPDATE, 0, Buffer.concat([u32(1), u32(1), u32(0)]))],
  ['WINDOW_UPDATE with flags 1', () => controlFrame(TYPE.WINDOW_UPDATE, 1, Buffer.concat([u32(1), u32(1)]))],
  ['SETTINGS whose count exceeds its entries', () => controlFrame(TYPE.SETTINGS, 0, Buffer.concat([u32(2), u32(4), u32(100)]))],
  ['PING with version 2', () => controlFrame(TYPE.PING, 0, u32(1), { version: 2 })],
  ['RST_STREAM with version 2', () => controlFrame(TYPE.RST_STREAM, 0, Buffer.concat([u32(1), u32(5)]), { version: 2 })],
  ['SYN_STREAM with version 1', () => controlFrame(TYPE.SYN_STREAM, 0, Buffer.concat([u32(3), u32(0), Buffer.from([0, 0]), Buffer.from('78f9e3c6a7c2', 'hex')]), { version: 1 })],
  ['SYN_STREAM of length 6', () => controlFrame(TYPE.SYN_STREAM, 0, Buffer.concat([u32(3), Buffer.from([0, 0])]))],
  ['DATA on stream 0', () => dataFrame(0, Buffer.from('x'))],
];

describe('malformed control frames: GOAWAY(PROTOCOL_ERROR) and close', () => {
  for (const [name, frame] of FATAL) {
    for (const withStream of [false, true]) {
      test(`${name}${withStream ? ' (after stream 1)' : ''}`, async () => {
        const peer = await execPeer();
        // With stream 1 open the GOAWAY must name it as the last good id.
        if (withStream) await openReplied(peer, [['streamtype', 'error']]);
        peer.send(frame());
        await expectFatal(peer, withStream ? 1 : 0);
        await serverStillWorks();
      });
    }
  }
});

describe('header blocks that break the shared zlib context', () => {
  test('a decompression bomb: 8 KiB that inflate to 8 MiB', async () => {
    const peer = await execPeer();
    await openReplied(peer, [['streamtype', 'error']]);
    const block = await peer.compress([['x-bomb', Buffer.alloc(8 * 1024 * 1024)]]);
    assert.ok(block.length < 16 * 1024, `compressed to ${block.length}`);
    peer.send(synStreamFrame(3, block));
    await expectFatal(peer, 1);
    await serverStillWorks();
  });

  test('a header block that is not zlib at all', async () => {
    const peer = await execPeer();
    peer.send(synStreamFrame(1, Buffer.from('ffffffff0123456789abcdef', 'hex')));
    await expectFatal(peer, 0);
    await serverStillWorks();
  });

  test('a header block compressed with another dictionary', async () => {
    const peer = await execPeer();
    const zlib = await import('node:zlib');
    const block = zlib.deflateSync(encodeNV([['streamtype', 'error']]), {
      dictionary: Buffer.from('not the spdy dictionary'),
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
    peer.send(synStreamFrame(1, block));
    await expectFatal(peer, 0);
    await serverStillWorks();
  });

  test('a block cut short mid-stream (the second block, truncated)', async () => {
    const peer = await execPeer();
    await openReplied(peer, [['streamtype', 'bogus']]);
    const block = await peer.compress([['streamtype', 'error'], ['x-pad', 'a'.repeat(3000)]]);
    // Compress the well-formed next streams first: the server closes the
    // connection at the cut block, and with it our deflater.
    const next5 = await peer.compress([['streamtype', 'error']]);
    const next7 = await peer.compress([['streamtype', 'stdout']]);
    peer.send(synStreamFrame(3, block.subarray(0, Math.floor(block.length / 2))));
    // Well-formed next streams, which the server can no longer decode.
    peer.send(synStreamFrame(5, next5));
    peer.send(synStreamFrame(7, next7));
    // The block does not end on a sync-flush boundary, so the shared
    // context cannot follow the client any more: a session error at once,
    // as for any block that does not inflate (spdystream dies here too).
    await expectFatal(peer, 1);
    await serverStillWorks();
  });
});

describe('unknown control types are skipped by length', () => {
  test('NOOP (5), CREDENTIAL (10), 42, and a 1 MiB type 42 between stream creations', async () => {
    const peer = await execPeer();
    peer.send(controlFrame(TYPE.NOOP, 0));
    peer.send(controlFrame(TYPE.CREDENTIAL, 0, Buffer.concat([Buffer.from([0, 1]), u32(8), Buffer.from('fakeproof')])));
    await peer.pingRoundTrip(1);
    const big = controlFrame(42, 0xff, Buffer.alloc(1024 * 1024, 0x80));
    // In pieces, with pauses, so the skip spans many reads.
    for (let off = 0; off < big.length; off += 100000) {
      peer.send(big.subarray(off, off + 100000));
      await sleep(5);
    }
    peer.send(controlFrame(42, 0, Buffer.from('hello unknown')));
    await peer.pingRoundTrip(3);
    await rawExecCompletes(peer);
    await serverStillWorks();
  });
});

describe('stream ids: RST_STREAM(PROTOCOL_ERROR), the session goes on', () => {
  test('an even id from the client', async () => {
    const peer = await execPeer();
    await peer.synStream([['streamtype', 'bogus']], { id: 2 });
    await peer.expect({ type: TYPE.RST_STREAM, streamId: 2, status: RST.PROTOCOL_ERROR });
    // The refused frame's block went through the zlib context: the next
    // SYN_STREAM still decodes.
    await peer.pingRoundTrip(1);
    await rawExecCompletes(peer);
    await serverStillWorks();
  });

  test('a reused id', async () => {
    const peer = await execPeer();
    const id = await openReplied(peer, [['streamtype', 'bogus']]);
    await peer.synStream([['streamtype', 'bogus']], { id });
    await peer.expect({ type: TYPE.RST_STREAM, streamId: id, status: RST.PROTOCOL_ERROR });
    await peer.pingRoundTrip(1);
    await rawExecCompletes(peer, { already: [id] });
    await serverStillWorks();
  });

  test('a decreasing id', async () => {
    const peer = await execPeer();
    await openReplied(peer, [['streamtype', 'bogus']], { id: 5 });
    await peer.synStream([['streamtype', 'bogus']], { id: 3 });
    await peer.expect({ type: TYPE.RST_STREAM, streamId: 3, status: RST.PROTOCOL_ERROR });
    await peer.pingRoundTrip(1);
    peer.nextId = 7;
    await rawExecCompletes(peer, { already: [5] });
    await serverStillWorks();
  });

  test('header blocks that inflate but are malformed: duplicate and empty names', async () => {
    const peer = await execPeer();
    let id = await peer.synStream([['streamtype', 'error'], ['streamtype', 'stdout']]);
    await peer.expect({ type: TYPE.RST_STREAM, streamId: id, status: RST.PROTOCOL_ERROR });
    id = await peer.synStream([['', 'x'], ['streamtype', 'error']]);
    await peer.expect({ type: TYPE.RST_STREAM, streamId: id, status: RST.PROTOCOL_ERROR });
    await peer.pingRoundTrip(1);
    await rawExecCompletes(peer, { already: [id] });
    await serverStillWorks();
  });
});

describe('DATA on streams that do not take it', () => {
  test('DATA on an unknown stream: RST_STREAM(INVALID_STREAM) once', async () => {
    const peer = await execPeer();
    peer.send(dataFrame(99, Buffer.from('who is 99?')));
    peer.send(dataFrame(99, Buffer.from('again')));
    await peer.expect({ type: TYPE.RST_STREAM, streamId: 99, status: RST.INVALID_STREAM });
    await peer.pingRoundTrip(1); // no second RST before the echo
    await rawExecCompletes(peer);
    await serverStillWorks();
  });

  test('DATA after our FIN: RST_STREAM(STREAM_ALREADY_CLOSED)', async () => {
    const peer = await execPeer();
    const id = await openReplied(peer, [['streamtype', 'bogus']]);
    peer.send(dataFrame(id, Buffer.alloc(0), FLAG_FIN));
    peer.send(dataFrame(id, Buffer.from('late')));
    await peer.expect({ type: TYPE.RST_STREAM, streamId: id, status: RST.STREAM_ALREADY_CLOSED });
    await peer.pingRoundTrip(1);
    await serverStillWorks();
    peer.destroy();
  });

  test('harmless frames: SETTINGS, WINDOW_UPDATE for unknown streams, RST for unknown streams, our-parity PING', async () => {
    const peer = await execPeer();
    peer.send(settingsFrame([[4, 100], [3, 50]]));
    peer.send(windowUpdateFrame(77, 1000));
    peer.send(rstFrame(77, RST.CANCEL));
    peer.send(pingFrame(2)); // server parity: a pong to nothing, no echo
    await peer.pingRoundTrip(1);
    await rawExecCompletes(peer);
    await serverStillWorks();
  });

  test('a client GOAWAY before the streams exist ends the session', async () => {
    const peer = await execPeer();
    peer.send(goawayFrame(0, GOAWAY.OK));
    const frames = await peer.drainToClose(5000);
    assert.ok(!frames.some((f) => !f.control || f.type === TYPE.SYN_REPLY), frames.map(describeFrame).join('; '));
    await serverStillWorks();
  });
});

describe('remote command: stream bookkeeping', () => {
  test('a stream without streamtype is replied to but not counted', async () => {
    const peer = await execPeer();
    const unknown = await openReplied(peer, [['x-nothing', 'here']]);
    const ids = {};
    ids.error = await openReplied(peer, [['streamtype', 'error']]);
    ids.stdout = await openReplied(peer, [['streamtype', 'stdout']]);
    // Three streams exist but only two count: the command must not start.
    await peer.expectQuiet(500);
    assert.equal((await fx.h.stats()).running, 0, 'no process before the last stream');
    ids.stderr = await openReplied(peer, [['streamtype', 'stderr']]);
    await peer.until((p) => p.goaway, 10000, 'the session end');
    assert.equal(peer.stream(ids.stdout).data.toString(), 'raw-out\n');
    assert.equal(peer.stream(ids.stderr).data.toString(), 'raw-err\n');
    assert.equal(peer.stream(ids.error).data.toString(), SUCCESS_JSON);
    assert.deepEqual(peer.goaway.lastGoodId, ids.stderr);
    assert.equal(peer.goaway.status, GOAWAY.OK);
    assert.equal(peer.stream(unknown).data.length, 0);
    await peer.drainToClose();
    await serverStillWorks();
  });
});

describe('port-forward: header validation', () => {
  const BAD = [
    ['no port header', [['streamtype', 'error'], ['requestid', '0']]],
    ['port 0', [['streamtype', 'error'], ['port', '0'], ['requestid', '0']]],
    ['port 65536', [['streamtype', 'data'], ['port', '65536'], ['requestid', '0']]],
    ['port "abc"', [['streamtype', 'data'], ['port', 'abc'], ['requestid', '0']]],
    ['port "-1"', [['streamtype', 'data'], ['port', '-1'], ['requestid', '0']]],
    ['empty port', [['streamtype', 'data'], ['port', ''], ['requestid', '0']]],
    ['no streamtype', [['port', '80'], ['requestid', '0']]],
    ['streamtype "stdin"', [['streamtype', 'stdin'], ['port', '80'], ['requestid', '0']]],
  ];

  test('each bad SYN_STREAM gets RST_STREAM(CANCEL) and no SYN_REPLY; a good pair then works', async () => {
    const peer = await pfPeer();
    for (const [what, headers] of BAD) {
      const id = await peer.synStream(headers);
      const f = await peer.next();
      assert.ok(f.type === TYPE.RST_STREAM && f.streamId === id && f.status === RST.CANCEL,
        `${what}: expected RST_STREAM ${id} CANCEL, got ${describeFrame(f)}`);
    }
    await peer.pingRoundTrip(1);
    const h = (t) => [['streamtype', t], ['port', String(echoPort)], ['requestid', '7']];
    const errId = await openReplied(peer, h('error'));
    peer.send(dataFrame(errId, Buffer.alloc(0), FLAG_FIN));
    const dataId = await openReplied(peer, h('data'));
    peer.send(dataFrame(dataId, Buffer.from('after the bad ones')));
    await peer.until((p) => p.stream(dataId).data.length >= 18, 5000, 'the echo');
    assert.equal(peer.stream(dataId).data.toString(), 'after the bad ones');
    peer.destroy();
    await serverStillWorks();
  });

  test('a second data stream for one request id: error text, RST(CANCEL) for the duplicate', async () => {
    const peer = await pfPeer();
    const h = (t) => [['streamtype', t], ['port', String(echoPort)], ['requestid', '0']];
    const errId = await openReplied(peer, h('error'));
    peer.send(dataFrame(errId, Buffer.alloc(0), FLAG_FIN));
    const dataId = await openReplied(peer, h('data'));
    const dup = await peer.synStream(h('data'));
    await peer.until((p) => p.stream(dup).rst !== null, 5000, 'the duplicate reset');
    assert.equal(peer.stream(dup).rst, RST.CANCEL);
    await peer.until((p) => p.stream(errId).data.length > 0, 5000, 'error text');
    assert.equal(peer.stream(errId).data.toString(),
      'error processing stream for request 0: data stream already assigned');
    // The first pair still forwards.
    peer.send(dataFrame(dataId, Buffer.from('pair 0')));
    await peer.until((p) => p.stream(dataId).data.length >= 6, 5000, 'the echo');
    assert.equal(peer.stream(dataId).data.toString(), 'pair 0');
    peer.destroy();
    await serverStillWorks();
  });
});

describe('creation timeouts (started first, --creation-timeout-ms 10000)', () => {
  test('exec with only the error stream: InternalError status, FIN, GOAWAY(1, OK), close', async () => {
    const r = (await timeouts['exec-error-only']) ?? { ok: false, e: new Error('never started') };
    assert.ok(r.ok, r.e?.stack);
    assert.ok(r.ms >= CREATION_TIMEOUT_MS - 3000, `after ${r.ms} ms`);
    const [status, fin, goaway, ...rest] = r.v;
    assert.deepEqual(rest, [], 'nothing after GOAWAY');
    assert.ok(status && !status.control && status.streamId === 1 && status.flags === 0, describeFrame(status ?? { closed: true }));
    assert.equal(status.payload.toString(), INTERNAL_TIMEOUT_JSON);
    assert.equal(describeFrame(fin), 'DATA id=1 flags=1 len=0 ""');
    assert.equal(describeFrame(goaway), 'GOAWAY v3 flags=0 len=8 lastGoodId=1 status=0');
  });

  test('exec with no stream at all: GOAWAY(0, OK), close', async () => {
    const r = (await timeouts['exec-nothing']) ?? { ok: false, e: new Error('never started') };
    assert.ok(r.ok, r.e?.stack);
    assert.ok(r.ms >= CREATION_TIMEOUT_MS - 3000, `after ${r.ms} ms`);
    assert.deepEqual(r.v, ['GOAWAY v3 flags=0 len=8 lastGoodId=0 status=0']);
  });

  test('port-forward pair without its data stream: timeout text on the error stream, session stays', async () => {
    const r = (await timeouts['pf-error-only']) ?? { ok: false, e: new Error('never started') };
    assert.ok(r.ok, r.e?.stack);
    assert.ok(r.ms >= CREATION_TIMEOUT_MS - 3000, `after ${r.ms} ms`);
    assert.match(r.v.text, /^\(conn=0x[0-9a-f]+, request=0\) timed out waiting for streams$/, JSON.stringify(r.v));
    assert.equal(r.v.rst, null, JSON.stringify(r.v));
    assert.equal(r.v.open, true, JSON.stringify(r.v));
  });

  test('the server still works after them', serverStillWorks);
});

stopTest(fx, 'spdy bad input');
