// The terminal size a tty process starts with (issue 13 item 2): `stty size`
// run as the exec's command itself, 50 times per client and transport, in a
// real terminal (tmux), must print the size of the client's terminal every
// time. crictl is $CRICTL or crictl on PATH (cri-tools is no Debian
// package: without one those tests skip, saying so). The server waits for the client's first resize message (bounded by
// tty-size-wait-ms) before it starts the process; the clients send it right
// after the streams are set up. Attach to a tty container: the size of the
// attaching terminal reaches the container's terminal at once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeFront, KUBECTL, kubeSkipReason, runPodRetry, TRANSPORTS } from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';
import { SLUICECTL, Tmux, haveTmux, sleep, tmpDir } from './lib/sluicectl.mjs';

const NS = 'sluice-test';
// 50 in the plain lane (the count); the sanitizer lane runs the
// same path 10 times, for memory errors, in a fifth of the time (12 min).
const RUNS = process.env.ASAN_OPTIONS ? 10 : 50;
const SUITE_TIMEOUT_MS = 1500000; // 300 runs; under ASan on a loaded machine
const CRICTL = process.env.CRICTL || 'crictl';
const crictlSkip = spawnSync(CRICTL, ['--version'], { stdio: 'ignore' }).status === 0 ? false
  : `no crictl (cri-tools is not packaged in Debian 12): set CRICTL=/path/to/crictl`;
const skip = skipReason() || (haveTmux() ? false : 'tmux is not installed') ||
  (fs.existsSync(SLUICECTL) ? false : `no sluicectl at ${SLUICECTL}`);

// Runs `cmd` n times in one tmux terminal of width x height, each followed
// by "EXIT=<code>"; resolves the terminal's whole output (pipe-pane), which
// keeps every line the runs printed, however far they scrolled.
async function runInTerminal(name, dir, cmd, n, { width, height, perRunMs = 10000 }) {
  const go = path.join(dir, `${name}.go`);
  const out = path.join(dir, `${name}.out`);
  const script = path.join(dir, `${name}.sh`);
  fs.writeFileSync(script, `while [ ! -f ${go} ]; do sleep 0.05; done\n` +
    `i=0; while [ $i -lt ${n} ]; do i=$((i+1)); ${cmd}; echo "EXIT=$?"; done\n` +
    'echo ALL-RUNS-DONE\nexec sleep 600\n');
  const tm = new Tmux(name);
  try {
    tm.start(`sh ${script}`, { width, height });
    tm.tmux('pipe-pane', '-o', '-t', tm.name, `cat >> ${out}`);
    fs.writeFileSync(go, '');
    const end = Date.now() + n * perRunMs;
    for (;;) {
      const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
      if (text.includes('ALL-RUNS-DONE')) return text;
      if (Date.now() > end) throw new Error(`${name}: runs not done in time:\n${text.slice(-3000)}`);
      await sleep(200);
    }
  } finally {
    tm.kill();
  }
}

// Splits the output into runs; returns {ok, bad: [text of each bad run]}.
function sizeResults(text, width, height) {
  const parts = text.split(/EXIT=(\d+)\r?\n/);
  const runs = [];
  for (let i = 0; i + 1 < parts.length; i += 2) runs.push({ text: parts[i], code: Number(parts[i + 1]) });
  const want = `${height} ${width}`;
  const bad = runs.filter((r) => r.code !== 0 ||
    !r.text.split(/\r?\n/).some((l) => l.trim() === want));
  return { runs: runs.length, bad: bad.map((r) => JSON.stringify(r)) };
}

describe('the terminal size a tty exec starts with', { skip, timeout: SUITE_TIMEOUT_MS }, () => {
  let sd;
  let kf;
  let ctrId;
  let ttyCtrId;
  let dir;

  before(async () => {
    dir = tmpDir('ttysize');
    sd = await SluicedInstance.start({ label: 'ttysz' });
    const pod = await runPodRetry(sd, 'ttysize', { hostNetwork: true });
    ctrId = await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
    const tpod = await runPodRetry(sd, 'ttyctr', { hostNetwork: true });
    // A tty container that prints its terminal's size whenever it changes.
    ttyCtrId = await sd.runContainer(tpod, 't', {
      tty: true,
      stdin: true,
      command: ['sh', '-c', 'last=; while :; do s=$(stty size); ' +
        '[ "$s" != "$last" ] && echo "size=$s"; last=$s; sleep 0.05; done'],
    });
    if (!kubeSkipReason()) kf = await KubeFront.start({ endpoint: sd.endpoint });
  }, { timeout: 180000 }); // an ASan sluiced on a loaded machine took over 60 s

  after(async () => {
    kf?.destroy();
    if (sd) await sd.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60000 });

  for (const t of ['spdy', 'websocket']) {
    test(`sluicectl exec -it over ${t}: stty size as the command, ${RUNS} runs`, async () => {
      const [width, height] = t === 'spdy' ? [101, 31] : [97, 29];
      const cmd = `${SLUICECTL} -r ${sd.endpoint} exec -it -r ${t} ${ctrId} stty size`;
      const text = await runInTerminal(`ctl-${t}`, dir, cmd, RUNS, { width, height });
      const r = sizeResults(text, width, height);
      assert.equal(r.runs, RUNS, text.slice(-2000));
      assert.deepEqual(r.bad, [], `${r.bad.length}/${RUNS} runs without "${height} ${width}"`);
    });
  }

  for (const t of ['spdy', 'websocket']) {
    test(`crictl exec -it over ${t}: stty size as the command, ${RUNS} runs`,
      { skip: crictlSkip }, async () => {
        const [width, height] = t === 'spdy' ? [107, 37] : [89, 23];
        const cmd = `${CRICTL} --config /dev/null -r ${sd.endpoint} exec -it --transport ${t} ` +
          `${ctrId} stty size`;
        const text = await runInTerminal(`crictl-${t}`, dir, cmd, RUNS, { width, height });
        const r = sizeResults(text, width, height);
        assert.equal(r.runs, RUNS, text.slice(-2000));
        assert.deepEqual(r.bad, [], `${r.bad.length}/${RUNS} runs without "${height} ${width}"`);
      });
  }

  for (const [t, env] of Object.entries(TRANSPORTS)) {
    test(`kubectl exec -it over ${t}: stty size as the command, ${RUNS} runs`,
      { skip: kubeSkipReason() }, async () => {
        const [width, height] = t === 'spdy' ? [103, 33] : [91, 27];
        const envs = Object.entries({ ...env, KUBECONFIG: kf.kubeconfig })
          .map(([k, v]) => `${k}=${v}`).join(' ');
        const cmd = `env ${envs} ${KUBECTL} --cache-dir ${kf.cacheDir} -n ${NS} exec -it ttysize ` +
          '-- stty size';
        const text = await runInTerminal(`kube-${t}`, dir, cmd, RUNS, { width, height });
        const r = sizeResults(text, width, height);
        assert.equal(r.runs, RUNS, text.slice(-2000));
        assert.deepEqual(r.bad, [], `${r.bad.length}/${RUNS} runs without "${height} ${width}"`);
      });
  }

  // Each attach comes from a terminal of another size; the container's
  // terminal takes it as the session starts.
  for (const t of ['spdy', 'websocket']) {
    test(`sluicectl attach -it over ${t}: the container's terminal takes the size`, async () => {
      for (const [width, height] of [[77, 21], [111, 35]]) {
        const name = `att-${t}-${width}`;
        const tm = new Tmux(name);
        try {
          tm.start(`${SLUICECTL} -r ${sd.endpoint} attach -it -r ${t} ${ttyCtrId}`, { width, height });
          await tm.waitScreen(new RegExp(`^size=${height} ${width}\\s*$`, 'm'), 5000);
          tm.keys('C-p', 'C-q');
        } finally {
          tm.kill();
        }
      }
    });
  }
});
