// Bad input from the peer: each case asserts the exact answer (HTTP status
// or WebSocket close code), and that a session already running on the same
// server is unharmed and completes normally afterwards.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { sleep } from './lib/hostd.mjs';
import { RawWs, frame, getRequest, rawRequest, wsHeaders } from './lib/raw.mjs';
import {
  CH, SUCCESS_JSON, UpgradeRefused, V4, V4B64, V5, connect, runSession,
} from './lib/session.mjs';

const MAX_HEAD = 2048;
const MAX_HEADERS = 20;
const MAX_LINE = 512;
const MAX_WS = 65536;

const fx = serverFixture([
  '--max-head-size', String(MAX_HEAD), '--max-headers', String(MAX_HEADERS),
  '--max-request-line', String(MAX_LINE), '--max-ws-message', String(MAX_WS),
]);
const fxTtl = serverFixture(['--token-ttl-ms', '200']);
const fxFull = serverFixture(['--max-pending-tokens', '3']);

const CAT = { cmd: ['cat'], stdin: 1, stdout: 1 };

function pathOf(wsUrl) {
  return new URL(wsUrl).pathname;
}

// A `cat` session that is running before the bad input and must finish
// normally after it.
async function startParallel(h) {
  const s = await connect(await h.execUrl(CAT), { protocols: [V5] });
  s.send(CH.STDIN, 'before\n');
  await s.waitFor((x) => x.text(CH.STDOUT) === 'before\n', 'the parallel session echo');
  return s;
}

async function finishParallel(h, s) {
  h.assertAlive();
  s.send(CH.STDIN, 'after\n');
  await s.waitFor((x) => x.text(CH.STDOUT) === 'before\nafter\n', 'the parallel echo after');
  s.sendClose(CH.STDIN);
  await s.waitClosed();
  assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  assert.equal(s.closeInfo.code, 1000);
}

// Runs body() between the start and the end of a parallel session.
async function alongside(h, body) {
  const p = await startParallel(h);
  try {
    await body();
  } catch (e) {
    p.ws.terminate(); // do not let one failure cascade into the next tests
    throw e;
  }
  await finishParallel(h, p);
}

function expectStatus(r, status, body) {
  assert.equal(r.status, status, `status of ${JSON.stringify(r)}`);
  if (body !== undefined) assert.equal(r.body, body);
  assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body, 'latin1')));
  assert.equal(r.headers.connection, 'close');
}

// Refused WebSocket upgrade via `ws`: returns the UpgradeRefused error.
async function refused(url, opts) {
  let err = null;
  try {
    const s = await connect(url, opts);
    s.ws.terminate();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof UpgradeRefused, `expected a refused upgrade, got ${err}`);
  return err;
}

describe('HTTP head', () => {
  test('malformed request lines → 400', async () => {
    await alongside(fx.h, async () => {
      for (const req of ['GARBAGE\r\n\r\n', 'GET /exec/x HTTP/2.0\r\nHost: x\r\n\r\n',
        'GET /exec/x\x01y HTTP/1.1\r\nHost: x\r\n\r\n']) {
        const r = await rawRequest(fx.h.port, req);
        expectStatus(r, 400);
        assert.match(r.body, /^malformed request/, JSON.stringify(req));
      }
    });
  });

  // lib/http/http_head.c answers 400 (not 414) with a body naming the limit.
  test(`request line over --max-request-line ${MAX_LINE} → 400 naming the limit`, async () => {
    await alongside(fx.h, async () => {
      // Exactly at the limit is fine (and then the path is unknown: 404).
      const at = `/${'a'.repeat(MAX_LINE - 'GET  HTTP/1.1'.length - 1)}`;
      assert.equal(`GET ${at} HTTP/1.1`.length, MAX_LINE);
      expectStatus(await rawRequest(fx.h.port, getRequest(at)), 404);
      const r = await rawRequest(fx.h.port, getRequest(`${at}b`));
      expectStatus(r, 400, `request line exceeds the limit of ${MAX_LINE} bytes\n`);
      assert.equal(r.reason, 'Bad Request');
    });
  });

  test(`head over --max-head-size ${MAX_HEAD} → 431 naming the limit`, async () => {
    await alongside(fx.h, async () => {
      const head = (n) => {
        const base = getRequest('/nothing', ['X-Pad: ']);
        return getRequest('/nothing', [`X-Pad: ${'p'.repeat(n - base.length)}`]);
      };
      assert.equal(head(MAX_HEAD).length, MAX_HEAD);
      expectStatus(await rawRequest(fx.h.port, head(MAX_HEAD)), 404);
      const r = await rawRequest(fx.h.port, head(MAX_HEAD + 1));
      expectStatus(r, 431, `request head exceeds the limit of ${MAX_HEAD} bytes\n`);
      assert.equal(r.reason, 'Request Header Fields Too Large');
    });
  });

  test(`more than --max-headers ${MAX_HEADERS} header fields → 431 naming the limit`, async () => {
    await alongside(fx.h, async () => {
      const extra = (n) => Array.from({ length: n }, (_, i) => `X-H${i}: v`);
      // getRequest adds Host: so MAX_HEADERS - 1 extra fields is the limit.
      expectStatus(await rawRequest(fx.h.port, getRequest('/nothing', extra(MAX_HEADERS - 1))), 404);
      const r = await rawRequest(fx.h.port, getRequest('/nothing', extra(MAX_HEADERS)));
      expectStatus(r, 431, `request has more than ${MAX_HEADERS} header fields\n`);
    });
  });
});

describe('routes and tokens', () => {
  test('DELETE → 405 with Allow, and does not burn the token', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['echo', 'still-valid'], stdout: 1 });
      const r = await rawRequest(fx.h.port, getRequest(pathOf(url), [], 'DELETE'));
      expectStatus(r, 405);
      assert.equal(r.headers.allow, 'GET, POST');
      const s = await runSession(url, { protocols: [V5] });
      assert.equal(s.text(CH.STDOUT), 'still-valid\n');
      assert.equal(s.closeInfo.code, 1000);
    });
  });

  test('unknown paths → 404', async () => {
    await alongside(fx.h, async () => {
      for (const p of ['/', '/nothing', '/execx/abc', '/exec', '/exec/a/b']) {
        const r = await rawRequest(fx.h.port, getRequest(p));
        expectStatus(r, 404);
      }
    });
  });

  test('unknown token → 404 "404 page not found"', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['true'], stdout: 1 });
      const fake = url.replace(/[^/]+$/, (t) => 'A'.repeat(t.length));
      const e = await refused(fake, { protocols: [V5] });
      assert.equal(e.status, 404);
      assert.equal(e.body, '404 page not found\n');
      await runSession(url, { protocols: [V5] }); // use the real one up
    });
  });

  test('a token works once; the second use → 404', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['echo', 'once'], stdout: 1 });
      const s = await runSession(url, { protocols: [V5] });
      assert.equal(s.text(CH.STDOUT), 'once\n');
      const e = await refused(url, { protocols: [V5] });
      assert.equal(e.status, 404);
    });
  });

  test('an exec token on /attach/ → 404, and it is consumed', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['true'], stdout: 1 });
      const e = await refused(url.replace('/exec/', '/attach/'), { protocols: [V5] });
      assert.equal(e.status, 404);
      assert.equal((await refused(url, { protocols: [V5] })).status, 404);
    });
  });

  test('expired token (--token-ttl-ms 200) → 404', async () => {
    await alongside(fxTtl.h, async () => {
      const url = await fxTtl.h.execUrl({ cmd: ['true'], stdout: 1 });
      await sleep(400);
      const e = await refused(url, { protocols: [V5] });
      assert.equal(e.status, 404);
      assert.equal(e.body, '404 page not found\n');
    });
  });

  test('full token cache (--max-pending-tokens 3) → admin 429', async () => {
    await alongside(fxFull.h, async () => {
      const urls = [];
      for (let i = 0; i < 3; i++) urls.push(await fxFull.h.execUrl({ cmd: ['echo', `t${i}`], stdout: 1 }));
      const r = await fxFull.h.execRaw({ cmd: ['true'], stdout: 1 });
      assert.equal(r.status, 429);
      assert.equal(typeof r.body.error, 'string');
      assert.ok(r.body.error.length > 0);
      // Using one frees a slot.
      const s = await runSession(urls[0], { protocols: [V5] });
      assert.equal(s.text(CH.STDOUT), 't0\n');
      urls[0] = await fxFull.h.execUrl({ cmd: ['echo', 't3'], stdout: 1 });
      for (const [i, u] of urls.entries()) {
        const ss = await runSession(u, { protocols: [V5] });
        assert.equal(ss.text(CH.STDOUT), `t${i === 0 ? 3 : i}\n`);
      }
    });
  });
});

describe('WebSocket handshake', () => {
  test('unknown subprotocol → 403', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['true'], stdout: 1 });
      const e = await refused(url, { protocols: ['v3.channel.k8s.io'] });
      assert.equal(e.status, 403);
    });
  });

  test('Sec-WebSocket-Version 8 → 400 with Sec-WebSocket-Version: 13', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['true'], stdout: 1 });
      const r = await rawRequest(fx.h.port, getRequest(pathOf(url),
        wsHeaders({ key: 'dGhlIHNhbXBsZSBub25jZQ==', version: '8', protocols: [V5] })));
      expectStatus(r, 400);
      assert.equal(r.headers['sec-websocket-version'], '13');
    });
  });
});

describe('WebSocket messages', () => {
  test('unknown channels 7 and 200 are ignored; the session completes', async () => {
    await alongside(fx.h, async () => {
      const s = await runSession(await fx.h.execUrl(CAT), { protocols: [V5] }, async (ss) => {
        ss.send(7, 'seven\n');
        ss.send(200, 'two hundred\n');
        ss.sendRaw(Buffer.alloc(0)); // an empty message, also ignored
        ss.send(CH.STDIN, 'hello\n');
        ss.sendClose(CH.STDIN);
      });
      assert.equal(s.text(CH.STDOUT), 'hello\n');
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
      assert.equal(s.closeInfo.code, 1000);
    });
  });

  test('base64: unknown channel and undecodable messages are ignored', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'read a; echo "got:$a"'], stdin: 1, stdout: 1 });
      const s = await runSession(url, { protocols: [V4B64] }, async (ss) => {
        ss.sendRaw(`7${Buffer.from('x\n').toString('base64')}`);
        ss.sendRaw('0!!!notbase64');
        ss.sendRaw(`0${Buffer.from('ok\n').toString('base64')}`);
      });
      assert.equal(s.text(CH.STDOUT), 'got:ok\n');
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    });
  });

  test('v4: a [255, 0] message is not a CLOSE (v5 only) and is ignored', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'read a; echo "got:$a"'], stdin: 1, stdout: 1 });
      const s = await runSession(url, { protocols: [V4] }, async (ss) => {
        ss.sendRaw(Buffer.from([CH.CLOSE, CH.STDIN]));
        ss.send(CH.STDIN, 'x\n');
      });
      assert.equal(s.text(CH.STDOUT), 'got:x\n');
      assert.equal(s.closeInfo.code, 1000);
    });
  });

  test('malformed resize JSON: later resizes are ignored, the session completes', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl({
        cmd: ['sh', '-c', 'while read x; do echo "size=$(stty size)"; done; echo done'],
        tty: 1, stdin: 1, stdout: 1,
      });
      const s = await runSession(url, { protocols: [V5] }, async (ss) => {
        ss.send(CH.RESIZE, 'garbage{');
        ss.resize(100, 30);
        ss.send(CH.STDIN, 'a\n');
        await ss.waitFor((x) => /size=\d+ \d+\r\n/.test(x.text(CH.STDOUT)), 'a size line');
        ss.sendClose(CH.STDIN);
      });
      assert.match(s.text(CH.STDOUT), /size=24 80\r\n/);
      assert.match(s.text(CH.STDOUT), /done\r\n$/);
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
      assert.equal(s.closeInfo.code, 1000);
    });
  });

  test(`a message at --max-ws-message ${MAX_WS} passes; 100 KiB → close 1009`, async () => {
    await alongside(fx.h, async () => {
      // Exactly at the limit (channel byte included) goes through.
      const atLimit = Buffer.alloc(MAX_WS - 1, 0x62);
      const ok = await runSession(await fx.h.execUrl(CAT), { protocols: [V5] }, async (ss) => {
        ss.send(CH.STDIN, atLimit);
        ss.sendClose(CH.STDIN);
      });
      assert.deepEqual(ok.channel(CH.STDOUT), atLimit);
      assert.equal(ok.closeInfo.code, 1000);

      const s = await runSession(await fx.h.execUrl(CAT), { protocols: [V5] }, async (ss) => {
        ss.send(CH.STDIN, Buffer.alloc(100 * 1024, 0x61));
      });
      assert.equal(s.closeInfo.code, 1009);
      assert.equal(s.text(CH.STDOUT), '');
    });
  });

  test('an oversized fragmented message → close 1009', async () => {
    await alongside(fx.h, async () => {
      const s = await runSession(await fx.h.execUrl(CAT), { protocols: [V5] }, async (ss) => {
        const part = Buffer.alloc(30 * 1024, 0x61);
        ss.sendRaw(Buffer.concat([Buffer.from([CH.STDIN]), part]), { fin: false, binary: true });
        ss.sendRaw(part, { fin: false, binary: true });
        ss.sendRaw(part, { fin: true, binary: true });
      });
      assert.equal(s.closeInfo.code, 1009);
    });
  });

  test('an unmasked client frame → close 1002', async () => {
    await alongside(fx.h, async () => {
      const url = await fx.h.execUrl(CAT);
      const raw = await RawWs.open(fx.h.port, pathOf(url), { protocols: [V5] });
      assert.equal(raw.headers['sec-websocket-protocol'], V5);
      // A masked stdin message first, echoed by cat: the session works.
      raw.write(frame(2, Buffer.from([CH.STDIN, 0x41, 0x0a])));
      const close = await (async () => {
        const deadline = Date.now() + 10000;
        while (!raw.frames.some((f) => f.opcode === 2 && f.payload.toString() === '\x01A\n')) {
          if (Date.now() > deadline) throw new Error(`no echo; frames ${raw.describe()}`);
          await sleep(5);
        }
        raw.write(frame(2, Buffer.from([CH.STDIN, 0x42]), { mask: false }));
        return raw.waitCloseFrame();
      })();
      assert.equal(close.code, 1002);
      await raw.waitEnd();
    });
  });

  for (const bad of [[CH.CLOSE], [CH.CLOSE, 9], [CH.CLOSE, CH.STDIN, 0]]) {
    test(`malformed v5 CLOSE [${bad.join(', ')}] → close 1002, process stopped`, async () => {
      await alongside(fx.h, async () => {
        // Once the process runs (the start-up race is vanish.test.mjs's).
        const cmd = ['sh', '-c', 'echo started; exec sleep 1000'];
        const s = await runSession(await fx.h.execUrl({ cmd, stdin: 1, stdout: 1 }),
          { protocols: [V5] }, async (ss) => {
            await ss.waitFor((x) => x.text(CH.STDOUT) === 'started\n', 'the process to start');
            ss.sendRaw(Buffer.from(bad));
          });
        assert.equal(s.closeInfo.code, 1002);
        // Only the parallel session's process is left.
        await fx.h.waitStats((st) => st.sessions === 1 && st.running === 1, 5000,
          'the sleep killed and its session gone');
      });
    });
  }
});

stopTest(fx, 'limits');
stopTest(fxTtl, 'token TTL');
stopTest(fxFull, 'token cache');
