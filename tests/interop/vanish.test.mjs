// Clients that vanish mid-session (TCP socket destroyed, no close frame):
// the server must notice, kill and reap the process, and free every fd.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { CH, V5, connect, runSession } from './lib/session.mjs';

const fx = serverFixture();
// "Within a few seconds" of the socket going away.
const CLEANUP_MS = 5000;

let baseline = null;

test('baseline: fds of the idle server after a warm-up session', async () => {
  const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'echo warm'], stdout: 1 });
  const s = await runSession(url, { protocols: [V5] });
  assert.equal(s.text(CH.STDOUT), 'warm\n');
  baseline = await fx.h.waitStats((st) => st.sessions === 0 && st.running === 0, 5000, 'idle');
  assert.ok(baseline.fds > 0, JSON.stringify(baseline));
});

// Opens a session, waits until ready(session) holds, checks that /stats
// sees it, destroys the socket, and waits for everything to be released.
async function vanish(opts, ready, { beforeCut } = {}) {
  assert.ok(baseline, 'baseline test ran');
  let outBytes = 0;
  const url = await fx.h.execUrl(opts);
  const s = await connect(url, {
    protocols: [V5],
    keep: (ch) => ch === CH.ERROR,
    sink: (ch, buf) => {
      if (ch === CH.STDOUT || ch === CH.STDERR) outBytes += buf.length;
    },
  });
  await s.waitFor(() => ready(s, outBytes), 'the session to be under way');
  const during = await fx.h.stats();
  assert.equal(during.sessions, 1, JSON.stringify(during));
  assert.equal(during.running, 1, JSON.stringify(during));
  assert.ok(during.fds > baseline.fds, `fds during ${during.fds} > baseline ${baseline.fds}`);
  if (beforeCut) await beforeCut(s);
  const cutAt = Date.now();
  s.ws.terminate(); // destroys the TCP socket: no close frame
  const end = await fx.h.waitStats(
    (st) => st.sessions === 0 && st.running === 0 && st.fds === baseline.fds,
    CLEANUP_MS,
    `sessions 0, running 0, fds ${baseline.fds} after the client vanished`,
  );
  assert.deepEqual(end, { ...baseline });
  fx.h.assertAlive();
  return Date.now() - cutAt;
}

test('while `yes` streams', async () => {
  await vanish({ cmd: ['yes'], stdout: 1 }, (s, n) => n >= 256 * 1024);
});

test('while a shell loop echoes on stdout (stderr open too)', async () => {
  await vanish({ cmd: ['sh', '-c', 'while :; do echo x; done'], stdout: 1, stderr: 1 },
    (s, n) => n >= 16 * 1024);
});

test('while `sleep 1000` runs with stdin open', async () => {
  await vanish({ cmd: ['sleep', '1000'], stdin: 1, stdout: 1 },
    (s) => s.messages.length > 0); // the "connected" message came
});

test('while `sleep 1000` runs on a tty', async () => {
  await vanish({ cmd: ['sleep', '1000'], tty: 1, stdin: 1, stdout: 1 },
    (s) => s.messages.length > 0);
});

test('while the client reads nothing and the output is congested', async () => {
  await vanish({ cmd: ['yes'], stdout: 1 }, (s, n) => n > 0, {
    beforeCut: async (s) => {
      // Stop reading: the server's output queue fills and it stops
      // reading from the process. Give it time to get there.
      s.ws._socket.pause();
      await new Promise((r) => setTimeout(r, 300));
    },
  });
});

// The server stops reading the socket while its stdin queue is full
// (back-pressure); it must still notice that the peer went away.
test('while stdin input waits for a process that never reads it', async () => {
  await vanish({ cmd: ['sleep', '1000'], stdin: 1, stdout: 1 },
    (s) => s.messages.length > 0, {
      beforeCut: async (s) => {
        // More than the pipe and the server's stdin queue hold, so the
        // server stops reading the socket for a while.
        const chunk = Buffer.alloc(64 * 1024, 0x41);
        for (let i = 0; i < 32; i++) s.send(CH.STDIN, chunk);
        await new Promise((r) => setTimeout(r, 300));
      },
    });
});

stopTest(fx);
