// sluicectl ends on the first SIGTERM or SIGINT in every mode (issue 13
// item 7): port-forward (SPDY, tunnelled WebSocket, legacy), exec and attach
// with and without a terminal, also while an upload is stuck because the
// pod does not read it (that used to keep port-forward alive for minutes:
// the goodbye waited behind the stuck bytes). A real terminal is restored.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, runPodRetry } from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';
import { SLUICECTL, Tmux, ctlBackground, haveTmux, sleep, tmpDir } from './lib/sluicectl.mjs';

const END_MS = 4000; // the client library gives a stuck goodbye 2 s
const STUCK_MS = 800; // no write taken for this long: every buffer on the way is full
const skip = skipReason() || (fs.existsSync(SLUICECTL) ? false : `no sluicectl at ${SLUICECTL}`);

// Resolves {code, signal} of p, or null when it did not end within ms.
function endsWithin(exited, ms) {
  return Promise.race([exited, sleep(ms).then(() => null)]);
}

// Writes into w until it stops taking data for `ms`: resolves the byte count.
async function writeUntilStuck(w, ms) {
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  let sent = 0;
  let last = Date.now();
  const pump = () => {
    while (w.writable && w.write(chunk)) sent += chunk.length;
  };
  w.on('drain', () => { last = Date.now(); pump(); });
  pump();
  while (Date.now() - last < ms) await sleep(100);
  return sent;
}

describe('sluicectl on SIGTERM and SIGINT', { skip, timeout: 240000 }, () => {
  let sd;
  let pod;
  let sleeper; // stdin open, never read
  let ttyCtr;
  let sink; // accepts and never reads
  let sinkPort;
  let dir;

  before(async () => {
    dir = tmpDir('signals');
    sd = await SluicedInstance.start({ label: 'sig' });
    pod = await runPodRetry(sd, 'sig', { hostNetwork: true });
    sleeper = await sd.runContainer(pod, 's', { command: ['sleep', '100000'], stdin: true });
    ttyCtr = await sd.runContainer(pod, 't', { command: ['sh'], stdin: true, tty: true });
    sink = net.createServer((c) => { c.pause(); c.on('error', () => {}); });
    await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve));
    sinkPort = sink.address().port;
  }, { timeout: 60000 });

  after(async () => {
    sink?.close();
    if (sd) await sd.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60000 });

  for (const t of ['spdy', 'websocket', 'legacy']) {
    for (const sig of ['SIGTERM', 'SIGINT']) {
      test(`port-forward over ${t}: an upload the pod does not read, then ${sig}: exit 0 at once`,
        async () => {
          const local = await freePort();
          const pf = await ctlBackground(['-r', sd.endpoint, 'port-forward', '-r', t,
            '--address', '127.0.0.1', pod.id, `${local}:${sinkPort}`], { ready: /Forwarding from/ });
          const s = net.connect(local, '127.0.0.1');
          s.on('error', () => {});
          await new Promise((resolve) => s.on('connect', resolve));
          const sent = await writeUntilStuck(s, STUCK_MS);
          assert.ok(sent > 0);
          const t0 = Date.now();
          pf.proc.kill(sig);
          const r = await endsWithin(pf.exited, END_MS);
          s.destroy();
          if (!r) pf.proc.kill('SIGKILL');
          assert.ok(r, `still running ${END_MS} ms after ${sig} (${sent} bytes stuck)`);
          assert.deepEqual(r, { code: 0, signal: null }, pf.err());
          assert.ok(Date.now() - t0 < END_MS);
        });
    }
  }

  for (const kind of ['exec', 'attach']) {
    for (const t of ['spdy', 'websocket']) {
      for (const sig of ['SIGTERM', 'SIGINT']) {
        test(`${kind} -i over ${t}: stdin the container does not read, then ${sig}: ends at once`,
          async () => {
            const args = kind === 'exec'
              ? ['exec', '-i', '-r', t, sleeper, 'sleep', '1000']
              : ['attach', '-i', '-r', t, sleeper];
            const p = spawn(SLUICECTL, ['-r', sd.endpoint, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
            let err = '';
            p.stderr.on('data', (d) => { err += d; });
            p.stdin.on('error', () => {});
            const exited = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal })));
            const sent = await writeUntilStuck(p.stdin, STUCK_MS);
            p.kill(sig);
            const r = await endsWithin(exited, END_MS);
            if (!r) p.kill('SIGKILL');
            assert.ok(r, `still running ${END_MS} ms after ${sig} (${sent} bytes written); ${err}`);
            // it dies of the signal, as kubectl does, after restoring fd flags
            assert.deepEqual(r, { code: null, signal: sig });
          });
      }
    }
  }

  describe('in a real terminal (tmux)', { skip: haveTmux() ? false : 'tmux is not installed' }, () => {
    for (const kind of ['exec', 'attach']) {
      for (const sig of ['SIGTERM', 'SIGINT']) {
        test(`${kind} -it, then ${sig}: ends at once, the terminal restored`, async () => {
          const name = `${kind}-${sig}`;
          const f = path.join(dir, `${name}.sh`);
          const args = kind === 'exec' ? `exec -it ${sleeper} sh` : `attach -it ${ttyCtr}`;
          fs.writeFileSync(f, `stty -g > ${dir}/${name}.before\n` +
            `sh -c 'echo $$ > ${dir}/${name}.pid; exec "$@"' sh ${SLUICECTL} -r ${sd.endpoint} ${args}\n` +
            `echo EXIT=$?\nstty -g > ${dir}/${name}.after\nsleep 600\n`);
          const tm = new Tmux(name);
          try {
            tm.start(`sh ${f}`);
            await sleep(500);
            tm.keys('Enter'); // an attached shell prints its prompt again
            await tm.waitScreen(/# ?$/m); // the remote shell's prompt: raw mode is on
            const raw = paneStty(tm);
            assert.match(raw, /-icanon/, 'raw mode while attached');
            process.kill(Number(fs.readFileSync(`${dir}/${name}.pid`, 'utf8')), sig);
            const code = sig === 'SIGTERM' ? 143 : 130;
            await tm.waitScreen(new RegExp(`EXIT=${code}$`, 'm'), END_MS);
            // the script's `stty -g` runs after the EXIT line: wait for its output
            const after = `${dir}/${name}.after`;
            for (let i = 0; i < 100 && !(fs.existsSync(after) && fs.statSync(after).size); i++) await sleep(50);
            assert.equal(fs.readFileSync(after, 'utf8'),
              fs.readFileSync(`${dir}/${name}.before`, 'utf8'), 'terminal settings restored');
          } finally {
            tm.kill();
          }
        });
      }
    }
  });
});

// The settings of the tmux pane's terminal, read from outside.
function paneStty(tm) {
  const tty = tm.tmux('display-message', '-p', '-t', tm.name, '#{pane_tty}').trim();
  const fd = fs.openSync(tty, 'r');
  try {
    return spawnSync('stty', ['-a'], { stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8' }).stdout;
  } finally {
    fs.closeSync(fd);
  }
}
