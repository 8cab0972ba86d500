// libsluice's client side (include/sluice/client.h) through its test CLI,
// tests/tools/sl-stream, against sluice-hostd: exec/attach over SPDY and
// WebSocket, port-forward over SPDY, SPDY-in-WebSocket and the legacy
// channels, bulk data with sha256 checks, and no head-of-line blocking.
//
// The tool comes from $SL_STREAM, else <repo>/build/tests/tools/sl-stream.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { REPO, sleep } from './lib/hostd.mjs';

const TOOL = process.env.SL_STREAM
  ? path.resolve(process.env.SL_STREAM)
  : path.join(REPO, 'build/tests/tools/sl-stream');
const MiB = 1024 * 1024;
const BULK = 256 * MiB;
const RUN_TIMEOUT_MS = 60000;

const fx = serverFixture(['--container', 'echoer=cat']);

// ---- running the tool ------------------------------------------------------

const children = new Set();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

// Spawns sl-stream; collects stdout/stderr unless a sink takes stdout.
function tool(args, { stdoutSink = null } = {}) {
  if (!existsSync(TOOL))
    throw new Error(`no sl-stream at ${TOOL} (build it, or set SL_STREAM)`);
  const p = spawn(TOOL, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(p);
  const r = { p, stdout: '', stderr: '', code: null, signal: null };
  p.stdout.on('data', (d) => {
    if (stdoutSink) stdoutSink(d);
    else r.stdout += d;
  });
  p.stderr.on('data', (d) => {
    r.stderr += d;
  });
  p.stdin.on('error', () => {}); // the tool may exit before reading all
  r.done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`sl-stream ${args.join(' ')} still running after ${RUN_TIMEOUT_MS} ms;` +
        ` stderr: ${r.stderr}`));
    }, RUN_TIMEOUT_MS);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(p);
      r.code = code;
      r.signal = signal;
      resolve(r);
    });
  });
  return r;
}

async function waitFor(pred, what, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// Writes n bytes of position-dependent data to a writable with back-
// pressure; returns their sha256.
async function writeBulk(w, n) {
  const block = randomBytes(MiB);
  const h = createHash('sha256');
  for (let off = 0; off < n; off += MiB) {
    const chunk = Buffer.from(block.subarray(0, Math.min(MiB, n - off)));
    chunk.writeUInt32BE(off / MiB, 0);
    h.update(chunk);
    if (!w.write(chunk)) await new Promise((resolve) => w.once('drain', resolve));
  }
  return h.digest('hex');
}

const TRANSPORTS = ['spdy', 'websocket'];
const PROTOCOL = { spdy: 'v4.channel.k8s.io', websocket: 'v5.channel.k8s.io' };

// ---- exec / attach -------------------------------------------------------------

describe('exec and attach', () => {
  for (const t of TRANSPORTS) {
    for (const code of [0, 3, 255]) {
      test(`${t}: exit code ${code} is the tool's`, async () => {
        const url = await fx.h.execUrl({ cmd: ['sh', '-c', `echo hi; exit ${code}`], stdout: 1 });
        const r = await tool(['exec', url, '--transport', t, '-D']).done;
        assert.equal(r.code, code, r.stderr);
        assert.equal(r.stdout, 'hi\n');
        assert.match(r.stderr, new RegExp(`upgraded to ${PROTOCOL[t].replaceAll('.', '\\.')}`));
      });
    }

    test(`${t}: stdout and stderr stay apart`, async () => {
      const url = await fx.h.execUrl({
        cmd: ['sh', '-c', 'echo out1; echo err1 >&2; echo out2; echo err2 >&2'],
        stdout: 1, stderr: 1,
      });
      const r = await tool(['exec', url, '--transport', t]).done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'out1\nout2\n');
      assert.equal(r.stderr, 'err1\nerr2\n');
    });

    test(`${t}: stdin EOF reaches cat (${t === 'spdy' ? 'FIN' : 'v5 CLOSE'})`, async () => {
      const url = await fx.h.execUrl({ cmd: ['cat'], stdin: 1, stdout: 1, stderr: 1 });
      const r = tool(['exec', url, '--transport', t, '-i']);
      r.p.stdin.write('hello\n');
      await waitFor(() => r.stdout === 'hello\n', 'the first echo');
      r.p.stdin.end('world\n');
      await r.done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'hello\nworld\n');
    });

    test(`${t}: tty with initial size and a resize, seen by stty`, async () => {
      const url = await fx.h.execUrl({
        cmd: ['sh', '-c', 'stty size; read x; stty size'], tty: 1, stdin: 1, stdout: 1,
      });
      const r = tool(['exec', url, '--transport', t, '-i', '-t', '--size', '100x30',
        '--resize', '101x31']);
      await waitFor(() => r.stdout.includes('30 100'), 'the first size');
      r.p.kill('SIGUSR1'); // the tool sends 101x31
      await sleep(300);
      r.p.stdin.write('\n');
      await r.done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^30 100\r\n.*31 101\r\n$/s);
    });

    test(`${t}: 256 MiB through cat, sha256 both ways`, { timeout: 120000 }, async () => {
      const url = await fx.h.execUrl({ cmd: ['cat'], stdin: 1, stdout: 1 });
      const out = createHash('sha256');
      let n = 0;
      const r = tool(['exec', url, '--transport', t, '-i'], {
        stdoutSink: (d) => {
          out.update(d);
          n += d.length;
        },
      });
      const sent = await writeBulk(r.p.stdin, BULK);
      r.p.stdin.end();
      await r.done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(n, BULK);
      assert.equal(out.digest('hex'), sent);
    });

    test(`${t}: attach to a container`, async () => {
      const url = await fx.h.attachUrl({ container: 'echoer', stdin: 1, stdout: 1, stderr: 1 });
      const r = tool(['attach', url, '--transport', t, '-i']);
      r.p.stdin.end('attached\n');
      await r.done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'attached\n');
    });
  }

  test('a used token: upgrade refused with 404, exit 1', async () => {
    const url = await fx.h.execUrl({ cmd: ['true'], stdout: 1 });
    assert.equal((await tool(['exec', url]).done).code, 0);
    const r = await tool(['exec', url, '--transport', 'websocket']).done;
    assert.equal(r.code, 1);
    assert.match(r.stderr, /upgrade refused: token expired or unknown \(404\)/);
  });

  test('nothing listening: cannot connect, exit 1', async () => {
    const r = await tool(['exec', 'http://127.0.0.1:1/exec/x']).done;
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot connect: connecting to 127\.0\.0\.1:1: connection refused/);
  });
});

// ---- port-forward ------------------------------------------------------------

// The "pod" side: plain node servers on loopback, reached through hostd.
function serve(handler) {
  const srv = net.createServer(handler);
  srv.on('error', () => {});
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

// Sink: an 8-byte big-endian length L, then L bytes; answers with their
// sha256 (hex) and closes. Works without any half-close (legacy).
function sinkHandler(sock) {
  const h = createHash('sha256');
  let head = Buffer.alloc(0);
  let left = null;
  sock.on('error', () => {});
  sock.on('data', (d) => {
    if (left === null) {
      head = Buffer.concat([head, d]);
      if (head.length < 8) return;
      left = Number(head.readBigUInt64BE(0));
      d = head.subarray(8);
    }
    const take = d.subarray(0, left);
    h.update(take);
    left -= take.length;
    if (left === 0) sock.end(h.digest('hex'));
  });
}

// Source: sends `size` bytes of a fixed pattern (`first` bytes to the
// first connection) and closes.
function sourceHandler(size, block, first = size) {
  let n = 0;
  return (sock) => {
    sock.on('error', () => {});
    const total = n++ === 0 ? first : size;
    let off = 0;
    const more = () => {
      while (off < total) {
        const len = Math.min(block.length, total - off);
        off += len;
        if (!sock.write(block.subarray(0, len))) {
          sock.once('drain', more);
          return;
        }
      }
      sock.end();
    };
    more();
  };
}

async function pfUrl(ports = []) {
  const q = ['sandbox=pod-1', ...ports.map((p) => `port=${p}`)].join('&');
  const r = await fx.h.admin(`/portforward?${q}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.url;
}

// Starts `sl-stream pf` forwarding local:remote pairs; resolves with the
// process and the local ports it listens on.
async function startPf(url, transport, remotes, extra = []) {
  const args = ['pf', url, '--transport', transport, '-D', ...extra];
  for (const rp of remotes) args.push('--forward', `0:${rp}`);
  const r = tool(args);
  await waitFor(() => (r.stdout.match(/Forwarding from/g) || []).length === remotes.length ||
    r.code !== null, 'the listening ports');
  const ports = [...r.stdout.matchAll(/127\.0\.0\.1:(\d+) -> (\d+)/g)].map((m) => Number(m[1]));
  assert.equal(ports.length, remotes.length, r.stderr);
  return { r, ports };
}

// ended: the server may already have ended the session (legacy WebSocket
// closes once every pod connection is done, as the kubelet does), so the
// tool may be exiting on its own when our SIGTERM arrives.
async function stopPf(r, { ended = false } = {}) {
  r.p.kill('SIGTERM');
  const res = await r.done;
  if (ended && res.code === null)
    assert.equal(res.signal, 'SIGTERM', res.stderr);
  else
    assert.equal(res.code, 0, res.stderr);
  return res;
}

function connectLocal(port) {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => resolve(c));
    c.on('error', reject);
  });
}

// Uploads n bytes through the sink protocol; resolves with
// {sent, answer} (the sink's sha256 of what arrived). Waits for the
// answer, not for an end: the legacy protocol cannot carry one.
async function sinkUpload(port, n) {
  const c = await connectLocal(port);
  let answer = '';
  const answered = new Promise((resolve) => {
    c.on('data', (d) => {
      answer += d;
      if (answer.length >= 64) resolve();
    });
  });
  const len = Buffer.alloc(8);
  len.writeBigUInt64BE(BigInt(n));
  c.write(len);
  const sent = await writeBulk(c, n);
  await answered;
  c.destroy();
  return { sent, answer };
}

// Reads everything a source sends; resolves with {n, sha}.
function readAll(c) {
  const h = createHash('sha256');
  let n = 0;
  c.on('data', (d) => {
    h.update(d);
    n += d.length;
  });
  return new Promise((resolve) => c.on('end', () => resolve({ n, sha: h.digest('hex') })));
}

describe('port-forward', () => {
  for (const t of ['spdy', 'tunnel', 'legacy']) {
    test(`${t}: 256 MiB to a sink, sha256 checked`, { timeout: 120000 }, async () => {
      const sink = await serve(sinkHandler);
      const rp = sink.address().port;
      const { r, ports } = await startPf(await pfUrl(t === 'legacy' ? [rp] : []), t, [rp]);
      const { sent, answer } = await sinkUpload(ports[0], BULK);
      assert.equal(answer, sent);
      await stopPf(r, { ended: t === 'legacy' });
      sink.close();
    });
  }

  for (const t of ['spdy', 'tunnel']) {
    test(`${t}: echo with half-close both ways, and many connections on one session`,
      async () => {
        const echo = await serve((s) => {
          s.on('error', () => {});
          s.pipe(s); // ends its side when ours ends
        });
        const rp = echo.address().port;
        const { r, ports } = await startPf(await pfUrl(), t, [rp]);
        const one = async (i) => {
          const c = await connectLocal(ports[0]);
          const got = readAll(c);
          const data = randomBytes(MiB + i * 4099);
          c.end(data); // FIN through the data stream; the echo then ends
          const res = await got;
          assert.equal(res.n, data.length);
          assert.equal(res.sha, createHash('sha256').update(data).digest('hex'));
        };
        await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(one));
        const res = await stopPf(r);
        assert.equal((res.stderr.match(/connection \d+ done/g) || []).length, 8, res.stderr);
        echo.close();
      });
  }

  test('spdy: one connection refused by the pod, the other goes on', async () => {
    const echo = await serve((s) => {
      s.on('error', () => {});
      s.pipe(s);
    });
    const dead = await serve(() => {});
    const deadPort = dead.address().port;
    await new Promise((resolve) => dead.close(resolve)); // nothing listens there now
    const { r, ports } = await startPf(await pfUrl(), 'spdy', [deadPort, echo.address().port]);
    const live = await connectLocal(ports[1]);
    const gotLive = readAll(live);
    live.write('before\n');
    // The tool resets it after the server's error text: the local
    // application sees an error, not an empty stream that ended well.
    const badEnd = await new Promise((resolve) => {
      const bad = net.connect(ports[0], '127.0.0.1');
      bad.on('error', (e) => resolve(e.code));
      bad.on('end', () => resolve('end'));
    });
    assert.equal(badEnd, 'ECONNRESET');
    await waitFor(() => /an error occurred forwarding connection \d+: error forwarding port/
      .test(r.stderr), 'the per-connection error');
    live.end('after\n');
    assert.equal((await gotLive).n, 'before\nafter\n'.length);
    await stopPf(r);
    echo.close();
  });

  // The client withholds the stalled stream's window (our server enforces
  // the window the client announced); towards a server without flow
  // control it would keep reading and hold up to max_buffered (16 MiB).
  test('spdy: 16 connections on one session, one local reader stalled, 15 complete',
    { timeout: 60000 }, async () => {
      const SIZE = 2 * MiB;
      const BIG = 12 * MiB; // past the socket buffers, under max_buffered
      const block = randomBytes(64 * 1024);
      const shaOf = (n) => {
        const h = createHash('sha256');
        for (let off = 0; off < n; off += block.length) h.update(block);
        return h.digest('hex');
      };
      const source = await serve(sourceHandler(SIZE, block, BIG));
      const { r, ports } = await startPf(await pfUrl(), 'spdy', [source.address().port]);
      // The stalled one first: the pod side sees it first and sends it BIG.
      const stalled = await connectLocal(ports[0]);
      stalled.pause();
      await sleep(300);
      const conns = await Promise.all(Array.from({ length: 15 }, () => connectLocal(ports[0])));
      const results = await Promise.all(conns.map(readAll));
      for (const res of results) {
        assert.equal(res.n, SIZE);
        assert.equal(res.sha, shaOf(SIZE));
      }
      // The stalled reader still gets every byte once it reads.
      const late = readAll(stalled);
      stalled.resume();
      const res = await late;
      assert.equal(res.n, BIG);
      assert.equal(res.sha, shaOf(BIG));
      await stopPf(r);
      source.close();
    });

  // The other direction: with SPDY flow control announced by the client
  // (--spdy-window), our server holds back only the stream whose pod-side
  // reader stalls (it withholds that stream's window) instead of pausing
  // the whole connection, as it must for a client without flow control.
  test('spdy: 16 uploads, one pod-side reader stalled, 15 complete', { timeout: 30000 },
    async () => {
      const stalledSockets = [];
      let first = true;
      const sink = await serve((s) => {
        if (first) { // the pod side of the first connection never reads
          first = false;
          s.pause();
          stalledSockets.push(s);
          return;
        }
        sinkHandler(s);
      });
      const { r, ports } = await startPf(await pfUrl(), 'spdy', [sink.address().port],
        ['--spdy-window', String(256 * 1024)]);
      try {
        const stalled = await connectLocal(ports[0]);
        stalled.on('error', () => {});
        await sleep(200); // its pair is set up first
        stalled.write(Buffer.alloc(64 * MiB)); // far more than the socket buffers take
        const uploads = Array.from({ length: 15 }, () => sinkUpload(ports[0], 2 * MiB));
        const all = Promise.all(uploads);
        const timeout = sleep(10000).then(() => 'stalled');
        const res = await Promise.race([all, timeout]);
        assert.notEqual(res, 'stalled', 'the other uploads were held back');
        for (const u of res) assert.equal(u.answer, u.sent);
        stalled.destroy();
      } finally {
        for (const s of stalledSockets) s.destroy();
        r.p.kill('SIGTERM');
        await r.done;
        sink.close();
      }
    });
});

// With flow control announced, our server's glue deadlocks as soon as the
// client's window on an output stream closes: lib/server (spdy_rc.c,
// spdy_pf.c) stops reading the process/pod socket while the stream's queue
// is above output_high_water/2 and resumes it only when the *connection*
// drains from above its high-water mark, which never happens when it was
// the window, not the socket, that held the data back. Until that is fixed
// the client announces nothing by default.
describe('SPDY flow control announced by the client (server glue bug)', () => {
  const DEADLINE_MS = 10000;
  async function within(p, r) {
    const res = await Promise.race([p, sleep(DEADLINE_MS).then(() => 'stalled')]);
    if (res === 'stalled') {
      r.p.kill('SIGKILL');
      await r.done.catch(() => {});
      assert.fail(`stalled: no progress within ${DEADLINE_MS} ms`);
    }
    return res;
  }

  test('exec: 8 MiB through cat',
    async () => {
      const url = await fx.h.execUrl({ cmd: ['cat'], stdin: 1, stdout: 1 });
      let n = 0;
      const r = tool(['exec', url, '-i', '--spdy-window', String(256 * 1024)], {
        stdoutSink: (d) => {
          n += d.length;
        },
      });
      const work = (async () => {
        await writeBulk(r.p.stdin, 8 * MiB);
        r.p.stdin.end();
        return r.done;
      })();
      const res = await within(work, r);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(n, 8 * MiB);
    });

  test('port-forward: 8 MiB from a source',
    async () => {
      const block = randomBytes(64 * 1024);
      const source = await serve(sourceHandler(8 * MiB, block));
      const { r, ports } = await startPf(await pfUrl(), 'spdy', [source.address().port],
        ['--spdy-window', String(256 * 1024)]);
      try {
        const c = await connectLocal(ports[0]);
        const res = await within(readAll(c), r);
        assert.equal(res.n, 8 * MiB);
      } finally {
        r.p.kill('SIGTERM');
        await r.done.catch(() => {});
        source.close();
      }
    });
});

stopTest(fx, 'client');
