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

// What /stats showed before a case; a case must bring it back exactly
// (compared with this, not with zero, so one failure does not cascade).
async function before() {
  assert.ok(baseline, 'baseline test ran');
  return fx.h.stats();
}

function restored(was, what) {
  return fx.h.waitStats(
    (st) => st.sessions === was.sessions && st.running === was.running && st.fds === was.fds,
    CLEANUP_MS,
    `${JSON.stringify(was)} again ${what}`,
  );
}

// Opens a session, waits until ready(session) holds, checks that /stats
// sees it, destroys the socket, and waits for everything to be released.
async function vanish(opts, ready, { beforeCut } = {}) {
  const was = await before();
  let outBytes = 0;
  const url = await fx.h.execUrl(opts);
  const s = await connect(url, {
    protocols: [V5],
    keep: () => outBytes < 4096, // the start of the output; `yes` is endless
    sink: (ch, buf) => {
      if (ch === CH.STDOUT || ch === CH.STDERR) outBytes += buf.length;
    },
  });
  await s.waitFor(() => ready(s, outBytes), 'the session to be under way');
  const during = await fx.h.stats();
  assert.equal(during.sessions, was.sessions + 1, JSON.stringify(during));
  assert.equal(during.running, was.running + 1, JSON.stringify(during));
  assert.ok(during.fds > was.fds, `fds during ${during.fds} > before ${was.fds}`);
  if (beforeCut) await beforeCut(s);
  s.ws.terminate(); // destroys the TCP socket: no close frame
  await restored(was, 'after the client vanished');
  fx.h.assertAlive();
}

test('while `yes` streams', async () => {
  await vanish({ cmd: ['yes'], stdout: 1 }, (s, n) => n >= 256 * 1024);
});

test('while a shell loop echoes on stdout (stderr open too)', async () => {
  await vanish({ cmd: ['sh', '-c', 'while :; do echo x; done'], stdout: 1, stderr: 1 },
    (s, n) => n >= 16 * 1024);
});

// Prints "started" once it runs, then sleeps (the start-up race has a test
// of its own below).
const SLEEP = ['sh', '-c', 'echo started; exec sleep 1000'];
const started = (s) => s.text(CH.STDOUT).startsWith('started');

test('while `sleep 1000` runs with stdin open', async () => {
  await vanish({ cmd: SLEEP, stdin: 1, stdout: 1 }, started);
});

test('while `sleep 1000` runs on a tty', async () => {
  await vanish({ cmd: SLEEP, tty: 1, stdin: 1, stdout: 1 }, started);
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

// Right after the upgrade the process may not have finished starting
// (fork done, setsid() not yet): cancelling it then must still kill it.
test('right after the upgrade, 20 times in a row', async () => {
  const was = await before();
  for (let i = 0; i < 20; i++) {
    const url = await fx.h.execUrl({ cmd: ['sleep', '1000'], stdin: 1, stdout: 1 });
    const s = await connect(url, { protocols: [V5] });
    s.ws.terminate();
    await restored(was, `after vanishing client #${i + 1}`);
  }
});

// The server stops reading the socket while its stdin queue is full
// (back-pressure); it must still notice that the peer went away. Here the
// peer's FIN waits in its own send queue behind the stdin bytes that the
// server does not read (zero window), so the server's socket still says
// ESTABLISHED: only traffic from the server (which the closed peer answers
// with RST) or reading can reveal it.
test('while stdin input waits for a process that never reads it', async () => {
  await vanish({ cmd: SLEEP, stdin: 1, stdout: 1 }, started, {
    beforeCut: async (s) => {
      // Far more than the pipe and the server's stdin queue hold, so the
      // server stops reading the socket.
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      for (let i = 0; i < 32; i++) s.send(CH.STDIN, chunk);
      await new Promise((r) => setTimeout(r, 300));
    },
  });
});

stopTest(fx);
