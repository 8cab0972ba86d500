// stdin: v5 CLOSE as EOF, base64 input, byte transparency, a 64 MiB
// round trip under back-pressure, and client-node's stdin stream.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { sleep } from './lib/hostd.mjs';
import { Collector, kubeExec } from './lib/kube.mjs';
import {
  CH, SUCCESS_JSON, V1B64, V4B64, V5, connect, runSession,
} from './lib/session.mjs';

const fx = serverFixture();

const CAT = { cmd: ['cat'], stdin: 1, stdout: 1 };

describe('v5 stdin and CLOSE', () => {
  test('CLOSE of stdin makes cat return with its input echoed', async () => {
    const url = await fx.h.execUrl(CAT);
    const input = 'hello\nworld\n';
    const s = await runSession(url, { protocols: [V5] }, async (ss) => {
      ss.send(CH.STDIN, 'hello\n');
      ss.send(CH.STDIN, 'world\n');
      await ss.waitFor((x) => x.text(CH.STDOUT) === input, 'the echo before CLOSE');
      ss.sendClose(CH.STDIN);
    });
    assert.equal(s.text(CH.STDOUT), input);
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    assert.equal(s.closeInfo.code, 1000);
  });

  test('CLOSE right away: cat sees EOF on empty input', async () => {
    const url = await fx.h.execUrl(CAT);
    const s = await runSession(url, { protocols: [V5] }, async (ss) => ss.sendClose(CH.STDIN));
    assert.equal(s.text(CH.STDOUT), '');
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    assert.equal(s.closeInfo.code, 1000);
  });

  test('data queued just before CLOSE still reaches the process', async () => {
    const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'wc -c'], stdin: 1, stdout: 1 });
    const s = await runSession(url, { protocols: [V5] }, async (ss) => {
      for (let i = 0; i < 100; i++) ss.send(CH.STDIN, Buffer.alloc(1000, 0x61));
      ss.sendClose(CH.STDIN);
    });
    assert.equal(s.text(CH.STDOUT).trim(), '100000');
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  test('all 256 byte values through cat, byte-exact, in varied message sizes', async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const rev = Buffer.from(all).reverse();
    const url = await fx.h.execUrl(CAT);
    const s = await runSession(url, { protocols: [V5] }, async (ss) => {
      ss.send(CH.STDIN, all);
      // Then the reversed bytes in messages of 1, 2, 3, … bytes.
      for (let off = 0, n = 1; off < rev.length; off += n, n++)
        ss.send(CH.STDIN, rev.subarray(off, off + n));
      ss.sendClose(CH.STDIN);
    });
    assert.deepEqual(s.channel(CH.STDOUT), Buffer.concat([all, rev]));
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    assert.equal(s.closeInfo.code, 1000);
  });
});

describe('base64 stdin', () => {
  // v4/v1 cannot signal EOF, so the command reads a known amount.
  const cmd = ['sh', '-c', 'read a; read b; read c; printf "a=%s b=%s c=%s\\n" "$a" "$b" "$c"'];
  for (const proto of [V4B64, V1B64]) {
    test(`${proto}: text frames, binary frames, and split padded messages`, async () => {
      const url = await fx.h.execUrl({ cmd, stdin: 1, stdout: 1 });
      const s = await runSession(url, { protocols: [proto] }, async (ss) => {
        assert.equal(ss.base64, true);
        ss.sendRaw('0' + Buffer.from('wörld\n').toString('base64')); // text frame
        ss.sendRaw(Buffer.from('0' + Buffer.from('two\n').toString('base64')), { binary: true });
        // "h" then "i\n": every message is padded on its own.
        ss.sendRaw('0aA==');
        ss.sendRaw('0aQo=');
      });
      assert.equal(s.text(CH.STDOUT), 'a=wörld b=two c=hi\n');
      for (const m of s.messages) assert.equal(m.isBinary, false);
      assert.equal(s.text(CH.ERROR), proto === V4B64 ? SUCCESS_JSON : '');
      assert.equal(s.closeInfo.code, 1000);
    });
  }
});

// Waits while the socket has more than `high` bytes queued.
async function backPressure(ws, high) {
  while (ws.bufferedAmount > high) await sleep(1);
}

test('64 MiB of random data through cat: sha256 out == sha256 in', { timeout: 150000 }, async () => {
  const TOTAL = 64 * 1024 * 1024;
  const CHUNK = 32 * 1024;
  const HIGH = 1024 * 1024;
  const hin = createHash('sha256');
  const hout = createHash('sha256');
  let outBytes = 0;
  const url = await fx.h.execUrl(CAT);
  const s = await connect(url, {
    protocols: [V5],
    keep: (ch) => ch !== CH.STDOUT,
    sink: (ch, buf) => {
      if (ch !== CH.STDOUT) return;
      hout.update(buf);
      outBytes += buf.length;
    },
    timeoutMs: 20000,
  });
  for (let sent = 0; sent < TOTAL; sent += CHUNK) {
    const chunk = randomBytes(CHUNK);
    hin.update(chunk);
    s.send(CH.STDIN, chunk);
    await backPressure(s.ws, HIGH);
    if (s.closeInfo) break;
  }
  s.sendClose(CH.STDIN);
  await s.waitClosed(120000);
  assert.equal(outBytes, TOTAL);
  assert.equal(hout.digest('hex'), hin.digest('hex'));
  assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  assert.equal(s.closeInfo.code, 1000);
});

describe('@kubernetes/client-node Exec with a stdin stream', () => {
  test('PassThrough stdin reaches cat; its end is EOF (v5 CLOSE)', async () => {
    const url = await fx.h.execUrl(CAT);
    const stdin = new PassThrough();
    const stdout = new Collector();
    const input = Buffer.concat([Buffer.from('line one\n'), Buffer.from([0, 1, 2, 0xfe, 0xff]),
      Buffer.from('\nlast line\n')]);
    const r = await kubeExec(url, {
      stdout,
      stdin,
      onOpen: async () => {
        stdin.write(input.subarray(0, 9));
        await sleep(20);
        stdin.write(input.subarray(9));
        stdin.end();
      },
    });
    assert.equal(r.protocol, V5);
    assert.deepEqual(stdout.buffer(), input);
    assert.deepEqual(r.status, { metadata: {}, status: 'Success' });
    assert.equal(r.closeCode, 1000);
  });

  test('a line-reading command answers each line before EOF', async () => {
    const url = await fx.h.execUrl({
      cmd: ['sh', '-c', 'while read l; do echo "<$l>"; done; echo eof'], stdin: 1, stdout: 1,
    });
    const stdin = new PassThrough();
    const stdout = new Collector();
    const r = await kubeExec(url, {
      stdout,
      stdin,
      onOpen: async () => {
        for (const l of ['a', 'b', 'c']) {
          const before = stdout.text().length;
          stdin.write(`${l}\n`);
          const deadline = Date.now() + 5000;
          while (stdout.text().length === before && Date.now() < deadline) await sleep(5);
        }
        stdin.end();
      },
    });
    assert.equal(stdout.text(), '<a>\n<b>\n<c>\neof\n');
    assert.equal(r.status.status, 'Success');
    assert.equal(r.closeCode, 1000);
  });
});

stopTest(fx);
