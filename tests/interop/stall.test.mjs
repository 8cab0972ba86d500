// Clients that stop reading while a lot of output is offered: the stock
// kubectl through sluice-kube on sluiced, each transport (WebSocket: the
// port-forward runs SPDY tunnelled in WebSocket messages), exec stdout and
// port-forward. The client stops reading for STALL_MS while 1 GiB waits;
// sluiced, the pod's monitor (which serves the session) and sluice-kube must
// stay within a few MiB of memory meanwhile and, once the client reads
// again, every byte must arrive.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  freePort, KubeFront, kubeSkipReason, runPodRetry, sleep, TRANSPORTS, waitOutput,
} from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';

const NS = 'sluice-test';
// 1 GiB for 10 s (issue 13's case); under ASan (CI's second lane), where
// the copy is several times slower, 256 MiB for 4 s, still long enough
// that an unbounded buffer would show: the memory bound is the same.
const ASAN = /asan/.test(process.env.SLUICED || '');
const SIZE = (ASAN ? 256 : 1024) * 1024 * 1024;
const STALL_MS = ASAN ? 4000 : 10000;
// Growth allowed during the stall, per process: the connection's output
// mark (256 KiB), the pipe and socket buffers the kernel holds are not
// ours; a few MiB covers allocator slack.
const MAX_GROWTH_KIB = 8 * 1024;
const LINE = '0123456789abcdef\n';
const skip = skipReason() || kubeSkipReason();

// sha256 of `yes 0123456789abcdef | head -c SIZE`
function expectedSha() {
  const h = crypto.createHash('sha256');
  const block = Buffer.from(LINE.repeat(61681)); // whole lines, about 1 MiB
  let left = SIZE;
  while (left > 0) {
    const n = Math.min(left, block.length);
    h.update(n === block.length ? block : block.subarray(0, n));
    left -= n;
  }
  return h.digest('hex');
}

function rssKiB(pid) {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

// Reads a stream: hashes everything, stops reading once `first` bytes came
// for STALL_MS while sampling the processes' RSS, then reads to the end.
async function stallAndDrain(stream, pids) {
  const h = crypto.createHash('sha256');
  let n = 0;
  let stalled = null;
  const done = new Promise((resolve, reject) => {
    stream.on('error', reject);
    stream.on('end', resolve);
    stream.on('close', resolve);
  });
  const first = await new Promise((resolve) => {
    const onData = (d) => {
      h.update(d);
      n += d.length;
      if (n >= 1024 * 1024 && !stalled) {
        stream.pause();
        stalled = true;
        resolve();
      }
    };
    stream.on('data', onData);
  }).then(async () => {
    const before = pids.map(rssKiB);
    const peak = [...before];
    for (let t = 0; t < STALL_MS; t += 250) {
      await sleep(250);
      pids.forEach((p, i) => { peak[i] = Math.max(peak[i], rssKiB(p)); });
    }
    const atStall = n;
    stream.resume();
    return { before, peak, atStall };
  });
  await done;
  return { ...first, bytes: n, sha: h.digest('hex') };
}

function checkGrowth(r, names) {
  names.forEach((name, i) => {
    console.log(`# ${name}: ${r.before[i]} KiB before the stall, at most ${r.peak[i]} KiB during it`);
    const grew = r.peak[i] - r.before[i];
    assert.ok(grew < MAX_GROWTH_KIB,
      `${name} grew ${grew} KiB while the client did not read (${r.before[i]} -> ${r.peak[i]} KiB)`);
  });
}

describe('clients that stop reading: bounded memory, no byte lost', { skip, timeout: 600000 }, () => {
  let sd;
  let want;
  const fronts = {};
  let pfPort;
  let monPid; // the pod's monitor: the sessions live there
  const names = ['sluiced', 'sluice-kube', 'sluice-mon'];
  const pids = (kf) => [sd.proc.proc.pid, kf.proc.pid, monPid];

  before(async () => {
    // ASan keeps freed memory in quarantine (256 MiB by default), which
    // would read as growth: a small one here, the checks stay on.
    sd = await SluicedInstance.start({ label: 'stall', asanOptions: 'quarantine_size_mb=4' });
    pfPort = await freePort();
    const pod = await runPodRetry(sd, 'stall', { hostNetwork: true });
    await sd.runContainer(pod, 'c', {
      command: ['sh', '-c', `while :; do yes 0123456789abcdef | head -c ${SIZE} | ` +
        `nc -l -p ${pfPort}; done`],
    });
    monPid = Number(fs.readFileSync(path.join(sd.runDir, 'pods', pod.id, 'mon.pid'), 'utf8'));
    const asanOptions = 'quarantine_size_mb=4';
    fronts.websocket = await KubeFront.start({ endpoint: sd.endpoint, asanOptions });
    fronts.spdy = await KubeFront.start({ endpoint: sd.endpoint, asanOptions });
    want = expectedSha();
  }, { timeout: 120000 });

  after(async () => {
    for (const kf of Object.values(fronts)) kf.destroy();
    if (sd) await sd.destroy();
  }, { timeout: 60000 });

  for (const [transport, env] of Object.entries(TRANSPORTS)) {
    test(`${transport}: exec stdout, 1 GiB, the client stops reading for ${STALL_MS / 1000} s`,
      async () => {
        const kf = fronts[transport];
        const p = kf.spawnKubectl(['-n', NS, 'exec', 'stall', '--', 'sh', '-c',
          `yes 0123456789abcdef | head -c ${SIZE}`], { env });
        let stderr = '';
        p.stderr.on('data', (d) => { stderr += d; });
        const exited = new Promise((resolve) => p.on('close', (code) => resolve(code)));
        const r = await stallAndDrain(p.stdout, pids(kf));
        assert.equal(await exited, 0, stderr);
        checkGrowth(r, names);
        assert.equal(r.bytes, SIZE, `stalled at ${r.atStall}`);
        assert.equal(r.sha, want);
      });

    test(`${transport}: port-forward, 1 GiB, the client stops reading for ${STALL_MS / 1000} s`,
      async () => {
        const kf = fronts[transport];
        const p = kf.spawnKubectl(['-n', NS, 'port-forward', '--address', '127.0.0.1',
          'pod/stall', `:${pfPort}`], { env });
        try {
          const m = await waitOutput(p.stdout, /Forwarding from 127\.0\.0\.1:(\d+) ->/);
          const sock = net.connect(Number(m[1]), '127.0.0.1');
          const r = await stallAndDrain(sock, pids(kf));
          checkGrowth(r, names);
          assert.equal(r.bytes, SIZE, `stalled at ${r.atStall}`);
          assert.equal(r.sha, want);
        } finally {
          p.kill('SIGTERM');
        }
      });
  }
});
