// The streaming listener's connection budget. sluiced runs with an open-file
// limit of 1,024 (soft and hard, as on a host that does not raise it), so
// its streaming connections may take a quarter of it: 256. A flood of 2,000
// idle TCP connections to the streaming port, none sending a byte (the case
// that used to take every fd and lock the CRI socket out for the head
// timeout): 256 are held, every other one gets 503 "too many streaming
// connections" and is closed at once; a fresh CRI client's connect +
// Version is answered as fast as before the flood; a real exec client is
// refused with the same 503 while the budget is full and is served as soon
// as the idle connections go. (containerd 1.6's streaming server has no
// such budget, so there is nothing to compare.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { CH, SUCCESS_JSON, UpgradeRefused, V5, connect, runSession } from './lib/session.mjs';
import { SluicedInstance, destroyAll, skipReason, sleep, wsUrl } from './lib/sluiced.mjs';

const skip = skipReason();
const NOFILE = 1024;
const BUDGET = NOFILE / 4;
const FLOOD = 2000;
const PROBES = 5;
// As in grpc_limits.test.mjs: the target is 100 ms, bounded relative to
// the same probe just before the flood on this shared 2-core machine.
const TARGET_MS = 100;
const WORST_MS = 1000;
const WAIT_MS = 20000;
const REFUSAL = 'too many streaming connections\n';

// A raw TCP connection that never writes; records what comes and the EOF.
function idleConn(port) {
  return new Promise((resolve, reject) => {
    const c = { data: '', eof: false };
    c.sock = net.connect(port, '127.0.0.1', () => resolve(c));
    c.sock.on('data', (d) => { c.data += d.toString('latin1'); });
    c.sock.on('end', () => { c.eof = true; });
    c.sock.on('close', () => { c.eof = true; });
    c.sock.on('error', (e) => {
      if (c.sock.connecting) reject(e);
      else c.error = e;
    });
  });
}

async function flood(port) {
  const conns = [];
  for (let i = 0; i < FLOOD; i += 100) {
    const batch = [];
    for (let j = i; j < Math.min(FLOOD, i + 100); j++) batch.push(idleConn(port));
    conns.push(...(await Promise.all(batch)));
  }
  return conns;
}

async function waitUntil(pred, what, ms = WAIT_MS) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

// PROBES fresh clients, each on a connection of its own: connect + Version.
async function probe(endpoint, label) {
  const times = [];
  for (let i = 0; i < PROBES; i++) {
    const t = performance.now();
    const c = await connectCri(endpoint, { ownConnection: true });
    try {
      const v = await c.runtime.Version({ version: '' }, { deadlineMs: 5000 });
      assert.equal(v.runtime_name, 'sluice');
    } finally {
      c.close();
    }
    times.push(performance.now() - t);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(PROBES / 2)];
  console.log(`${label}: connect + Version ${times.map((x) => x.toFixed(1)).join(', ')} ms ` +
    `(median ${median.toFixed(1)})`);
  return { median, max: sorted.at(-1) };
}

describe(`streaming port flood, open-file limit ${NOFILE}`, { skip }, () => {
  let sd;
  let ctr;
  before(async () => {
    sd = await SluicedInstance.start({
      label: 'sbudg', nofile: NOFILE, args: ['--head-timeout-ms', '120000'],
    });
    const pod = await sd.runPod('budget', { hostNetwork: true });
    ctr = await sd.runContainer(pod, 'sleeper', { command: ['sleep', '3600'] });
  });
  after(() => destroyAll(sd));

  test('the budget is a quarter of the open-file limit, and sluiced says so', () => {
    assert.match(sd.proc.stderr,
      new RegExp(`msg="max-stream-connections lowered to a quarter of the open-file limit" configured=1024 used=${BUDGET}`));
  });

  test(`${FLOOD} idle connections: ${BUDGET} held, the rest 503 and closed; the CRI answers at once`,
    async () => {
      const pid = sd.proc.proc.pid;
      const base = fdCount(pid);
      const quiet = await probe(sd.endpoint, 'no flood');
      const conns = await flood(sd.proc.streamPort);
      await waitUntil(() => conns.filter((c) => c.eof).length >= FLOOD - BUDGET,
        `${FLOOD - BUDGET} connections refused`);
      const fds = fdCount(pid);
      console.log(`sluiced fds: ${base} before, ${fds} under the flood (limit ${NOFILE})`);
      assert.ok(fds <= base + BUDGET + 8, `${fds} fds open`);

      const p = await probe(sd.endpoint, `${FLOOD} idle streaming connections`);
      const bound = Math.max(TARGET_MS, 2 * quiet.median);
      assert.ok(p.median < bound, `median ${p.median} ms >= ${bound} ms`);
      assert.ok(p.max < WORST_MS, `slowest ${p.max} ms >= ${WORST_MS} ms`);

      await sleep(200);
      const refused = conns.filter((c) => c.eof);
      const held = conns.filter((c) => !c.eof);
      console.log(`${held.length} held, ${refused.length} refused`);
      assert.equal(held.length, BUDGET);
      assert.ok(held.every((c) => c.data === ''), 'a held connection got nothing yet');
      for (const c of refused) {
        assert.match(c.data, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
        assert.ok(c.data.endsWith(`\r\n\r\n${REFUSAL}`), JSON.stringify(c.data));
        assert.equal(c.error, undefined, 'closed, not reset');
      }

      // A real client meets the same answer while the budget is full ...
      const url = await sd.execUrl(ctr, ['echo', 'through']);
      await assert.rejects(connect(wsUrl(url), { protocols: [V5] }), (e) =>
        e instanceof UpgradeRefused && e.status === 503 && e.body === REFUSAL);

      // ... and is served once the idle connections are gone.
      for (const c of held) c.sock.destroy();
      await waitUntil(() => fdCount(pid) <= base + 2, 'the held connections closed');
      const s = await runSession(wsUrl(await sd.execUrl(ctr, ['echo', 'through'])),
        { protocols: [V5] });
      assert.equal(s.text(CH.STDOUT), 'through\n');
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
    });

  test('sluiced stops cleanly', async () => {
    await sd.stop();
  });
});
