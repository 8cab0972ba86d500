// A tty session waits for the client's first terminal size before it starts
// the process (tty-size-wait-ms), on every transport and version that has a
// resize stream; versions without one (SPDY v1, v2) and non-tty sessions
// start at once. The server here waits up to WAIT_MS, long enough to tell
// "waited" from "started at once" on a loaded machine.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { EXIT, goClientSkip, runGoClient } from './lib/goclient.mjs';
import { sleep } from './lib/hostd.mjs';
import { runPodRetry } from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';
import { CH, SUCCESS_JSON, V1, V4, V5, connect } from './lib/session.mjs';

const WAIT_MS = 5000;
const fx = serverFixture(['--tty-size-wait-ms', String(WAIT_MS), '--tty-container', 'c-tty=stty size']);
const tmp = mkdtempSync(path.join(tmpdir(), 'sluice-ttywait-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const STTY = { cmd: ['stty', 'size'], tty: 1, stdout: 1 };

// Opens a WebSocket session, sends the size after delayMs (or never), and
// resolves {s, ms: from open to close}.
async function wsRun(url, protocol, { delayMs = 0, size = [100, 30] } = {}) {
  const s = await connect(url, { protocols: [protocol] });
  const t0 = Date.now();
  if (size) {
    if (delayMs) await sleep(delayMs);
    s.resize(size[0], size[1]);
  }
  await s.waitClosed(WAIT_MS * 3);
  return { s, ms: Date.now() - t0 };
}

describe('WebSocket', () => {
  for (const proto of [V5, V4, V1]) {
    test(`${proto}: a size sent 300 ms after the streams is the size the process starts with`,
      async () => {
        const { s } = await wsRun(await fx.h.execUrl(STTY), proto, { delayMs: 300 });
        assert.equal(s.text(CH.STDOUT), '30 100\r\n', s.summary());
      });
  }

  test('no size sent: the process starts after tty-size-wait-ms, on the default size', async () => {
    const { s, ms } = await wsRun(await fx.h.execUrl(STTY), V5, { size: null });
    assert.ok(ms >= WAIT_MS - 50, `ended after ${ms} ms`);
    assert.equal(s.text(CH.STDOUT), '24 80\r\n', s.summary()); // hostproc's default
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  test('a size sent at once: no wait', async () => {
    const { s, ms } = await wsRun(await fx.h.execUrl(STTY), V5);
    assert.ok(ms < WAIT_MS / 2, `ended after ${ms} ms`);
    assert.equal(s.text(CH.STDOUT), '30 100\r\n', s.summary());
  });

  test('without a tty there is nothing to wait for', async () => {
    const { s, ms } = await wsRun(await fx.h.execUrl({ cmd: ['echo', 'hi'], stdout: 1 }), V5,
      { size: null });
    assert.ok(ms < WAIT_MS / 2, `ended after ${ms} ms`);
    assert.equal(s.text(CH.STDOUT), 'hi\n');
  });

  test('stdin sent while the session waits reaches the process', async () => {
    const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'read l; echo "got=$l $(stty size)"'],
      tty: 1, stdin: 1, stdout: 1 });
    const s = await connect(url, { protocols: [V5] });
    s.send(CH.STDIN, 'early\n');
    await sleep(200);
    s.resize(90, 20);
    await s.waitClosed(WAIT_MS * 3);
    assert.match(s.text(CH.STDOUT), /got=early 20 90\r\n$/, s.summary());
  });

  test('a client that leaves while the session waits: nothing runs, nothing is left', async () => {
    const s = await connect(await fx.h.execUrl({ cmd: ['sleep', '1000'], tty: 1, stdout: 1 }),
      { protocols: [V5] });
    s.ws.terminate();
    await fx.h.waitStats((st) => st.sessions === 0 && st.running === 0, WAIT_MS * 2,
      'no session, no process');
  });

  test('attach to a tty container: it starts with the size sent after 300 ms', async () => {
    const url = await fx.h.attachUrl({ container: 'c-tty', tty: 1, stdout: 1 });
    const { s } = await wsRun(url, V5, { delayMs: 300, size: [77, 21] });
    assert.equal(s.text(CH.STDOUT), '21 77\r\n', s.summary());
  });
});

describe('SPDY (the Go client on spdystream)', { skip: goClientSkip() }, () => {
  let seq = 0;
  async function goExec(proto, flags) {
    const r = await fx.h.execRaw(STTY);
    assert.equal(r.status, 200);
    const statusFile = path.join(tmp, `status-${seq++}`);
    const t0 = Date.now();
    const res = await runGoClient(['exec', '-protocols', proto, '-status-file', statusFile,
      '-t', ...flags, r.body.url], { timeoutMs: WAIT_MS * 3 });
    let status = null;
    try {
      status = readFileSync(statusFile, 'utf8');
    } catch {
      // no error stream (v1 resets it)
    }
    return { ...res, status, ms: Date.now() - t0 };
  }

  for (const proto of ['v4.channel.k8s.io', 'v3.channel.k8s.io']) {
    test(`${proto}: stty size as the command sees the client's size`, async () => {
      const r = await goExec(proto, ['-resize', '100x30']);
      assert.equal(r.code, EXIT.OK, r.stderr);
      assert.equal(r.stdout.toString(), '30 100\r\n');
      assert.ok(r.ms < WAIT_MS / 2, `took ${r.ms} ms`);
    });
  }

  for (const proto of ['v2.channel.k8s.io', 'channel.k8s.io']) {
    test(`${proto} has no resize stream: the process starts at once`, async () => {
      const r = await goExec(proto, []);
      assert.equal(r.code, EXIT.OK, r.stderr);
      assert.equal(r.stdout.toString(), '24 80\r\n');
      assert.ok(r.ms < WAIT_MS / 2, `took ${r.ms} ms`);
    });
  }
});

// sluiced hands each session to the pod's monitor, which serves it: the
// monitor's session must wait sluiced's tty-size-wait-ms, not libsluice's
// 100 ms default (a size sent after 1 s would then come too late).
describe('sluiced: the pod monitor serving the session waits tty-size-wait-ms',
  { skip: skipReason(), timeout: 120000 }, () => {
    const SD_WAIT_MS = 3000;
    let sd;
    let ctr;

    after(async () => { if (sd) await sd.stop(); }, { timeout: 60000 });

    test('set up a pod', async () => {
      sd = await SluicedInstance.start({ label: 'ttywait',
        args: ['--tty-size-wait-ms', String(SD_WAIT_MS)] });
      const pod = await runPodRetry(sd, 'ttywait', { hostNetwork: true });
      ctr = await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
    }, { timeout: 90000 });

    const url = async () => (await sd.execUrl(ctr, ['stty', 'size'], { tty: true }))
      .replace(/^http/, 'ws');

    test('a size sent 1 s after the streams is the size the process starts with', async () => {
      const { s } = await wsRun(await url(), V5, { delayMs: 1000 });
      assert.equal(s.text(CH.STDOUT), '30 100\r\n', s.summary());
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    });

    test('no size sent: the process starts after tty-size-wait-ms', async () => {
      const { s, ms } = await wsRun(await url(), V5, { size: null });
      assert.ok(ms >= SD_WAIT_MS - 50, `ended after ${ms} ms`);
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON, s.summary());
    });
  });

stopTest(fx);
