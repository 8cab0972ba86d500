// Port-forward over SPDY (portforward.k8s.io, protocol notes §7) with the
// Go reference client (`pf` and `pf-listen`) against pod-side Node servers:
// echo, sink (answers after EOF) and source. Plus a raw SPDY session to
// show that a failed pair leaves the others and the session usable.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { EXIT, goClientSkip, pumpPattern, runGoClient, startGoClient } from './lib/goclient.mjs';
import { FLAG_FIN, RST, RawSpdy, dataFrame, destroyAllPeers, upgrade } from './lib/spdy.mjs';

const PF = 'portforward.k8s.io';
const SANDBOX = 'sb-spdy-pf';
const BIG = 256 * 1024 * 1024;
const LATE_ANSWER_MS = 1500; // containerd 1.6 cuts a pair 1 s after the client's FIN

const skip = goClientSkip();
const fx = serverFixture();
const pod = {}; // the pod-side servers: ports and what they saw

function listen(handler) {
  return new Promise((resolve) => {
    const srv = net.createServer({ allowHalfOpen: true }, handler);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

// Answers "<bytes> <sha256>\n" once the client's side has ended.
function sinkHandler(delayMs) {
  return (s) => {
    const h = createHash('sha256');
    let n = 0;
    s.on('error', () => {});
    s.on('data', (d) => {
      h.update(d);
      n += d.length;
    });
    s.on('end', () => {
      pod.sinkEofs = (pod.sinkEofs || 0) + 1;
      setTimeout(() => s.end(`${n} ${h.digest('hex')}\n`), delayMs);
    });
  };
}

async function freePort() {
  const srv = await listen(() => {});
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  return port;
}

before(async () => {
  const servers = {
    echo: await listen((s) => {
      s.on('error', () => {});
      s.pipe(s); // allowHalfOpen: our end follows the client's
    }),
    sink: await listen(sinkHandler(0)),
    lateSink: await listen(sinkHandler(LATE_ANSWER_MS)),
    source: await listen((s) => {
      s.on('error', () => {});
      s.resume();
      pod.sourceSent = pumpPattern(s, BIG);
    }),
  };
  pod.servers = servers;
  for (const [k, v] of Object.entries(servers)) pod[k] = v.address().port;
  pod.closed = await freePort();
});
after(() => {
  destroyAllPeers();
  for (const s of Object.values(pod.servers || {})) s.close();
});

async function pfUrl() {
  const r = await fx.h.admin(`/portforward?sandbox=${SANDBOX}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.url;
}

// Connects to a forwarded local port, writes `total` pattern bytes, ends,
// and hashes everything read back until the far end ends.
function transfer(port, total) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const h = createHash('sha256');
    let got = 0;
    let sent;
    sock.on('error', reject);
    sock.on('connect', () => {
      sent = pumpPattern(sock, total);
      sent.catch(reject);
    });
    let head = '';
    sock.on('data', (d) => {
      h.update(d);
      got += d.length;
      if (head.length < 4096) head += d.subarray(0, 4096).toString('latin1');
    });
    sock.on('end', async () => {
      sock.end();
      resolve({ sent: await sent, gotBytes: got, gotSha256: h.digest('hex'), head });
    });
  });
}

// Everything a forwarded connection yields after writing `text` and ending.
function exchange(port, text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let out = '';
    sock.on('error', reject);
    sock.on('connect', () => sock.end(text));
    sock.setEncoding('utf8');
    sock.on('data', (d) => {
      out += d;
    });
    sock.on('end', () => {
      sock.end();
      resolve(out);
    });
  });
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

async function stopListener(cl) {
  cl.proc.kill('SIGTERM');
  const r = await cl.done;
  assert.equal(r.code, EXIT.OK, `pf-listen: ${JSON.stringify(r)}`);
}

describe('port-forward over SPDY with the Go client', { skip }, () => {
  test('pf: 256 MiB through the echo, sha256 equal both ways', async () => {
    const url = await pfUrl();
    let sent;
    const r = await runGoClient(['pf', url, String(pod.echo)], {
      input: (w) => {
        sent = pumpPattern(w, BIG);
      },
      hashStdout: true,
      timeoutMs: 60000,
    });
    const s = await sent;
    assert.equal(r.code, EXIT.OK, r.stderr);
    assert.equal(r.stdoutBytes, BIG, r.stderr);
    assert.equal(r.stdoutSha256, s.sha256);
  });

  test('pf-listen: 256 MiB into a sink and 256 MiB out of a source, one session', async () => {
    const url = await pfUrl();
    const cl = await startGoClient(['pf-listen', url, `0:${pod.sink}`, `0:${pod.source}`], { lines: 2 });
    try {
      const up = await transfer(cl.ports[0], BIG);
      // The sink saw our EOF, then answered with what it received.
      assert.equal(up.sent.bytes, BIG);
      assert.equal(up.head, `${BIG} ${up.sent.sha256}\n`);
      const down = await transfer(cl.ports[1], 0);
      const src = await pod.sourceSent;
      assert.equal(down.gotBytes, BIG);
      assert.equal(down.gotSha256, src.sha256);
      assert.equal((await fx.h.stats()).sessions, 1);
    } finally {
      await stopListener(cl);
    }
  });

  test('pf-listen: the sink\'s answer names exactly what went up', async () => {
    const url = await pfUrl();
    const cl = await startGoClient(['pf-listen', url, `0:${pod.sink}`]);
    try {
      const body = Buffer.from('x'.repeat(100000) + 'end');
      const answer = await exchange(cl.ports[0], body);
      assert.equal(answer, `${body.length} ${sha256(body)}\n`);
    } finally {
      await stopListener(cl);
    }
  });

  test('pf-listen: 16 concurrent connections on one session, right bytes each', async () => {
    const url = await pfUrl();
    await fx.h.waitStats((st) => st.sessions === 0, 5000, 'earlier sessions gone');
    const cl = await startGoClient(['pf-listen', url, `0:${pod.echo}`]);
    try {
      const sizes = Array.from({ length: 16 }, (_, i) => 1024 * 1024 + i * 4099);
      const results = await Promise.all(sizes.map((n) => transfer(cl.ports[0], n)));
      results.forEach((r, i) => {
        assert.equal(r.sent.bytes, sizes[i]);
        assert.equal(r.gotBytes, sizes[i], `connection ${i}`);
        assert.equal(r.gotSha256, r.sent.sha256, `connection ${i}`);
      });
      assert.equal((await fx.h.stats()).sessions, 1, 'all on one session');
    } finally {
      await stopListener(cl);
    }
  });

  test('pf: unreachable port gives the error text; the server goes on', async () => {
    const url = await pfUrl();
    const r = await runGoClient(['pf', url, String(pod.closed)], { input: 'hello' });
    assert.equal(r.code, EXIT.REMOTE, r.stderr);
    const want = `an error occurred forwarding stdio -> ${pod.closed}: ` +
      `error forwarding port ${pod.closed} to pod ${SANDBOX}, uid : ` +
      `failed to connect to localhost:${pod.closed}`;
    assert.ok(r.stderr.includes(want), `want ${JSON.stringify(want)} in ${JSON.stringify(r.stderr)}`);
    assert.match(r.stderr, /Connection refused/);
    const ok = await runGoClient(['pf', await pfUrl(), String(pod.sink)], { input: 'abc' });
    assert.equal(ok.code, EXIT.OK, ok.stderr);
    assert.equal(ok.stdout.toString(), `3 ${sha256('abc')}\n`);
  });

  test('pf: client half-close reaches the pod, which answers (at once)', async () => {
    const eofs = pod.sinkEofs || 0;
    const input = 'half-close me\n';
    const r = await runGoClient(['pf', await pfUrl(), String(pod.sink)], { input });
    assert.equal(r.code, EXIT.OK, r.stderr);
    assert.equal(r.stdout.toString(), `${input.length} ${sha256(input)}\n`);
    assert.equal(pod.sinkEofs, eofs + 1, 'the pod saw EOF');
  });

  test(`pf-listen: half-close, the pod answers ${LATE_ANSWER_MS} ms after EOF, the answer arrives`, async () => {
    const cl = await startGoClient(['pf-listen', await pfUrl(), `0:${pod.lateSink}`]);
    try {
      const t0 = Date.now();
      const input = 'late answer please';
      const answer = await exchange(cl.ports[0], input);
      assert.equal(answer, `${input.length} ${sha256(input)}\n`);
      assert.ok(Date.now() - t0 >= LATE_ANSWER_MS - 50);
    } finally {
      await stopListener(cl);
    }
  });
});

// ---- raw SPDY: one session, a failing pair among good ones ----

async function openPair(peer, port, rid) {
  const headers = (type) => [['streamtype', type], ['port', String(port)], ['requestid', String(rid)]];
  const errId = await peer.synStream(headers('error'));
  await peer.until((p) => p.stream(errId).replied, 5000, `SYN_REPLY ${errId}`);
  peer.send(dataFrame(errId, Buffer.alloc(0), FLAG_FIN)); // client-go closes it at once
  const dataId = await peer.synStream(headers('data'));
  await peer.until((p) => p.stream(dataId).replied || p.stream(dataId).rst !== null, 5000,
    `SYN_REPLY ${dataId}`);
  return { errId, dataId };
}

async function echoOn(peer, id, text) {
  const s = peer.stream(id);
  const want = s.data.length + text.length;
  peer.send(dataFrame(id, Buffer.from(text)));
  await peer.until((p) => p.stream(id).data.length >= want, 5000, `echo on ${id}`);
  assert.equal(s.data.subarray(want - text.length).toString(), text);
}

describe('port-forward over SPDY, raw session', () => {
  test('an unreachable port fails its own pair only: text, FIN, RST(CANCEL) on data', async () => {
    const peer = await RawSpdy.connect(await pfUrl(), { protocols: [PF] });
    try {
      assert.equal(peer.response.get('x-stream-protocol-version'), PF);
      const a = await openPair(peer, pod.echo, 0);
      await echoOn(peer, a.dataId, 'hello');

      const b = await openPair(peer, pod.closed, 1);
      await peer.until((p) => p.stream(b.errId).fin && p.stream(b.dataId).rst !== null, 5000,
        'error text and reset');
      const text = peer.stream(b.errId).data.toString();
      assert.match(text, new RegExp(`^error forwarding port ${pod.closed} to pod ${SANDBOX}, uid : failed to connect to localhost:${pod.closed}`));
      assert.equal(peer.stream(b.dataId).rst, RST.CANCEL);
      assert.equal(peer.stream(b.dataId).data.length, 0);

      // The first pair and the session live on.
      await echoOn(peer, a.dataId, 'still here');
      const c = await openPair(peer, pod.echo, 2);
      await echoOn(peer, c.dataId, 'new pair');
      assert.equal(peer.goaway, undefined);

      // Our FIN on a's data stream reaches the echo, whose end comes back
      // as the server's FIN; then the server FINs a's error stream, empty.
      peer.send(dataFrame(a.dataId, Buffer.alloc(0), FLAG_FIN));
      await peer.until((p) => p.stream(a.dataId).fin && p.stream(a.errId).fin, 5000, 'pair a closes');
      assert.equal(peer.stream(a.errId).data.length, 0);
      assert.equal(peer.stream(a.dataId).rst, null);
      assert.equal(peer.stream(a.dataId).data.toString(), 'hellostill here');
    } finally {
      peer.destroy();
    }
  });

  test('a refused protocol: 403 naming portforward.k8s.io', async () => {
    const r = await upgrade(await pfUrl(), { protocols: ['v4.channel.k8s.io'] });
    assert.equal(r.res.status, 403, r.res.head);
    assert.deepEqual(r.res.all('x-accepted-stream-protocol-versions'), [PF]);
  });
});

stopTest(fx, 'spdy port-forward');
