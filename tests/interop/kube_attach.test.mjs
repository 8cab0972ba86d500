// What the kubelet relies on from attach, and a container whose command
// cannot start, checked with the stock kubectl (1.32) through sluice-kube on
// both kubectl transports, against sluiced and then containerd 1.6 (the
// reference) with the same pods; the last tests assert that both agree.
//   (a) tty + stdin, stdin_once false: a client that leaves (killed, or its
//       stdin ends) leaves the shell running; the next client talks to the
//       same shell; the container is the same one, still RUNNING.
//   (b) `echo 'echo hi' | kubectl attach -i`: returns (exit 0), the
//       container keeps running; sluiced also delivers the answer.
//   (c) stdin_once true: the first client's stdin EOF closes the container's
//       stdin: `cat` gets EOF and exits 0 after echoing the input.
//   (d) a command that does not exist: CreateContainer OK, StartContainer
//       fails naming the command, the container reads EXITED, exit code 128,
//       reason StartError (grpc-js, and kubectl get pod -o json).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, status as grpcStatus } from './lib/cri.mjs';
import { REPO } from './lib/hostd.mjs';
import {
  freePort, KubeFront, kubeSkipReason, sleep, stopSluiced, TRANSPORTS, waitOutput,
} from './lib/kubefront.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason } from './lib/sluiced.mjs';

const NS = 'sluice-test';
const CTRD = path.join(REPO, 'scripts/containerd');
const MISSING = 'no-such-command';
const MISSING_TEXT = `exec: "${MISSING}": executable file not found in $PATH`;
const SUITE_TIMEOUT_MS = 240000;
const ROUNDS_B = 3; // `echo 'echo hi' | kubectl attach -i` per transport

function containerdSkip() {
  if (process.getuid?.() !== 0) return 'needs root';
  if (spawnSync('containerd', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'containerd is not installed';
  return kubeSkipReason();
}

// One CRI runtime under test: its client, a kube front and pods made
// through plain CRI calls (the same calls for both runtimes).
class Backend {
  constructor(name, cri, endpoint) {
    this.name = name;
    this.cri = cri;
    this.endpoint = endpoint;
    this.pods = [];
    this.logDir = fs.mkdtempSync(path.join(os.tmpdir(), `ka-${name}-`));
  }

  podConfig(name) {
    return {
      metadata: { name, uid: `ka-${process.pid}-${this.name}-${name}`, namespace: NS, attempt: 0 },
      log_directory: path.join(this.logDir, name),
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
  }

  // A host-network pod with one container `c`; resolves {pod, ctr, config}.
  // start false: created only.
  async pod(name, ctr, { start = true } = {}) {
    const config = this.podConfig(name);
    let id;
    for (let i = 0; ; i++) { // sluiced's monitor-start flake (lib/kubefront.mjs)
      try {
        ({ pod_sandbox_id: id } = await this.cri.runtime.RunPodSandbox({ config },
          { deadlineMs: 60000 }));
        break;
      } catch (e) {
        if (i >= 9 || !/pod monitor did not start/.test(e.message)) throw e;
        await sleep(300);
      }
    }
    this.pods.push(id);
    const { container_id: cid } = await this.cri.runtime.CreateContainer({
      pod_sandbox_id: id, sandbox_config: config,
      config: { metadata: { name: 'c', attempt: 0 }, image: { image: BUSYBOX_IMAGE },
        log_path: 'c.log', ...ctr },
    }, { deadlineMs: 30000 });
    if (start) await this.cri.runtime.StartContainer({ container_id: cid }, { deadlineMs: 30000 });
    return { pod: id, ctr: cid, config };
  }

  async status(cid) {
    return (await this.cri.runtime.ContainerStatus({ container_id: cid })).status;
  }

  async waitState(cid, state, ms = 15000) {
    const end = Date.now() + ms;
    for (;;) {
      const st = await this.status(cid);
      if (st.state === state) return st;
      if (Date.now() > end) throw new Error(`${this.name}: ${cid} not ${state}: ${JSON.stringify(st)}`);
      await sleep(100);
    }
  }

  async containersOf(pod) {
    return (await this.cri.runtime.ListContainers({ filter: { pod_sandbox_id: pod } })).containers;
  }

  async removePods() {
    for (const id of this.pods) {
      await this.cri.runtime.StopPodSandbox({ pod_sandbox_id: id }).catch(() => {});
      await this.cri.runtime.RemovePodSandbox({ pod_sandbox_id: id }).catch(() => {});
    }
    this.pods = [];
  }
}

// Runs kubectl attach -i [-t] and keeps it: write lines, wait for output.
function attachClient(kf, env, pod, { tty = false } = {}) {
  const args = ['-n', NS, 'attach', '-i', ...(tty ? ['-t'] : []), pod];
  const p = kf.spawnKubectl(args, { env });
  const c = { p, out: '', err: '', exit: null };
  p.stdout.on('data', (d) => { c.out += d; });
  p.stderr.on('data', (d) => { c.err += d; });
  p.stdin.on('error', () => {});
  c.done = new Promise((resolve) => p.on('close', (code, signal) => {
    c.exit = { code, signal };
    resolve(c.exit);
  }));
  c.waitOut = (re, what) => waitOutput(p.stdout, re, 20000, what).catch((e) => {
    throw new Error(`${e.message}; all: ${JSON.stringify(c.out)}; stderr ${c.err}`);
  });
  return c;
}

async function withTimeout(promise, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, t]);
  } finally {
    clearTimeout(timer);
  }
}

const results = { sluiced: {}, containerd: {} };

// The same checks on one backend; what each observed goes to results[name].
function attachSuite(name, getBackend, getFront) {
  const r = results[name];
  const pods = {};
  const kc = (t, args, opts = {}) => getFront().kubectl(args, { env: TRANSPORTS[t], ...opts });

  test(`${name}: pods for every case`, async () => {
    const b = getBackend();
    const mk = async (key, ctr) => { pods[key] = { ...(await b.pod(key, ctr)), name: key }; };
    for (const t of Object.keys(TRANSPORTS)) {
      await mk(`tty-${t}`, { command: ['sh'], stdin: true, tty: true });
      await mk(`sh-${t}`, { command: ['sh'], stdin: true });
      await mk(`once-${t}`, { command: ['cat'], stdin: true, stdin_once: true });
    }
  });

  for (const t of Object.keys(TRANSPORTS)) {
    test(`${name} ${t} (a): tty attach, the client killed, then one whose stdin ends: the ` +
      'same shell runs on', async () => {
      const b = getBackend();
      const { pod, ctr, name: name0 } = pods[`tty-${t}`];
      const st0 = await b.status(ctr);
      const one = attachClient(getFront(), TRANSPORTS[t], name0, { tty: true });
      await sleep(500); // kubectl attached (it says so on stderr)
      one.p.stdin.write(`X=kept-$((6*7)); echo "first $X"\n`);
      await one.waitOut(/first kept-42/, 'the first client\'s answer');
      one.p.kill('SIGKILL');
      await one.done;
      await sleep(700); // the session is gone; a ^D would have ended the shell by now
      const mid = await b.status(ctr);
      const two = attachClient(getFront(), TRANSPORTS[t], name0, { tty: true });
      await sleep(500);
      two.p.stdin.write('echo "second $X $((6*8))"\n');
      await two.waitOut(/second kept-42 48/, 'the second client sees the first one\'s variable');
      two.p.stdin.end();
      const ex = await withTimeout(two.done, 15000, 'kubectl attach after its stdin ended');
      await sleep(700);
      const st = await b.status(ctr);
      const all = await b.containersOf(pod);
      r[`a-${t}`] = {
        afterKill: mid.state, state: st.state, containers: all.length,
        sameStart: String(st.started_at) === String(st0.started_at), exit: ex.code,
      };
      assert.deepEqual(r[`a-${t}`], { afterKill: 'CONTAINER_RUNNING', state: 'CONTAINER_RUNNING',
        containers: 1, sameStart: true, exit: 0 }, `${two.err}`);
    });

    test(`${name} ${t} (b): echo 'echo hi' | kubectl attach -i returns; the shell runs on`,
      async () => {
        const b = getBackend();
        const { ctr, name: podName } = pods[`sh-${t}`];
        const runs = [];
        for (let i = 0; i < ROUNDS_B; i++) {
          const t0 = Date.now();
          const res = await kc(t, ['-n', NS, 'attach', '-i', podName],
            { input: `echo hi-${i}\n`, timeoutMs: 20000 });
          runs.push({ code: res.code, out: res.stdout.toString(), ms: Date.now() - t0 });
        }
        const st = await b.status(ctr);
        r[`b-${t}`] = { codes: runs.map((x) => x.code), state: st.state,
          answered: runs.filter((x, i) => x.out === `hi-${i}\n`).length };
        assert.deepEqual(r[`b-${t}`].codes, Array(ROUNDS_B).fill(0), JSON.stringify(runs));
        assert.equal(st.state, 'CONTAINER_RUNNING');
        if (name === 'sluiced') // every answer, every time (containerd: see the agreement test)
          assert.equal(r[`b-${t}`].answered, ROUNDS_B, JSON.stringify(runs));
      });

    test(`${name} ${t} (c): stdin_once: the first client's EOF closes cat's stdin; it exits 0`,
      async () => {
        const b = getBackend();
        const { ctr, name: podName } = pods[`once-${t}`];
        const res = await kc(t, ['-n', NS, 'attach', '-i', podName],
          { input: 'foo\nbar\n', timeoutMs: 20000 });
        const st = await b.waitState(ctr, 'CONTAINER_EXITED');
        r[`c-${t}`] = { code: res.code, out: res.stdout.toString(), exit: st.exit_code };
        assert.deepEqual(r[`c-${t}`], { code: 0, out: 'foo\nbar\n', exit: 0 }, res.stderr);
      });
  }

  test(`${name} (d): a missing command: create OK, start fails naming it, EXITED 128 ` +
    'StartError (grpc-js and kubectl)', async () => {
    const b = getBackend();
    const { ctr } = await b.pod('missing', { command: [MISSING, 'arg'] }, { start: false });
    const created = await b.status(ctr);
    let err = null;
    try {
      await b.cri.runtime.StartContainer({ container_id: ctr }, { deadlineMs: 30000 });
    } catch (e) {
      err = e;
    }
    assert.ok(err, 'StartContainer must fail');
    const st = await b.status(ctr);
    const again = await b.cri.runtime.StartContainer({ container_id: ctr }).then(() => null,
      (e) => e.code);
    const kj = await kc('websocket', ['-n', NS, 'get', 'pod', 'missing', '-o', 'json']);
    assert.equal(kj.code, 0, kj.stderr);
    const cs = JSON.parse(kj.stdout).status.containerStatuses[0];
    r.d = {
      created: created.state, startCode: err.code, startNames: err.details.includes(MISSING_TEXT),
      state: st.state, exit: st.exit_code, reason: st.reason,
      messageNames: st.message.includes(MISSING_TEXT), startedAt: String(st.started_at),
      finished: BigInt(st.finished_at) >= BigInt(st.created_at) && String(st.finished_at) !== '0',
      restartRefused: again !== null,
      kubectl: { exitCode: cs.state.terminated?.exitCode, reason: cs.state.terminated?.reason,
        names: !!cs.state.terminated?.message?.includes(MISSING_TEXT) },
    };
    assert.deepEqual(r.d, {
      created: 'CONTAINER_CREATED', startCode: grpcStatus.UNKNOWN, startNames: true,
      state: 'CONTAINER_EXITED', exit: 128, reason: 'StartError', messageNames: true,
      startedAt: '0', finished: true, restartRefused: true,
      kubectl: { exitCode: 128, reason: 'StartError', names: true },
    }, `start error: ${err.details}; status message: ${st.message}`);
  });
}

describe('attach rules and start errors on sluiced, through sluice-kube',
  { skip: skipReason() || kubeSkipReason(), timeout: SUITE_TIMEOUT_MS }, () => {
    let sd;
    let backend;
    let front;
    before(async () => {
      sd = await SluicedInstance.start({ label: 'katt' });
      backend = new Backend('sluiced', sd.cri, sd.endpoint);
      front = await KubeFront.start({ endpoint: sd.endpoint });
    }, { timeout: 60000 });
    after(async () => {
      front?.destroy();
      if (backend) fs.rmSync(backend.logDir, { recursive: true, force: true });
      if (sd) await sd.destroy();
    }, { timeout: 60000 });

    attachSuite('sluiced', () => backend, () => front);

    test('the front exits 0; sluiced stops clean', async (t) => {
      await front.stop();
      front = null;
      await backend.removePods();
      await stopSluiced(sd, t);
      sd = null;
    }, { timeout: 60000 });
  });

describe('the same on containerd (reference), through sluice-kube',
  { skip: containerdSkip(), timeout: SUITE_TIMEOUT_MS }, () => {
    let backend;
    let front;
    let cri;
    let startedHere = false;
    before(async () => {
      const env = { ...process.env };
      if (spawnSync(CTRD, ['status'], { env }).status !== 0) {
        env.SLUICE_CONTAINERD_STREAM_PORT ??= String(await freePort());
        const s = spawnSync(CTRD, ['start'], { env, encoding: 'utf8' });
        if (s.status !== 0) throw new Error(`scripts/containerd start: ${s.stderr}`);
        startedHere = true;
      }
      const vars = Object.fromEntries(spawnSync(CTRD, ['env'], { env, encoding: 'utf8' }).stdout
        .trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      cri = await connectCri(vars.CONTAINERD_ENDPOINT);
      backend = new Backend('containerd', cri, vars.CONTAINERD_ENDPOINT);
      front = await KubeFront.start({ endpoint: vars.CONTAINERD_ENDPOINT });
    }, { timeout: 90000 });
    after(async () => {
      front?.destroy();
      if (backend) {
        await backend.removePods();
        fs.rmSync(backend.logDir, { recursive: true, force: true });
      }
      cri?.close();
      if (startedHere) spawnSync(CTRD, ['stop']);
    }, { timeout: 60000 });

    attachSuite('containerd', () => backend, () => front);

    test('the front exits 0', async () => {
      await front.stop();
      front = null;
    });
  });

describe('sluiced and containerd agree', { skip: skipReason() || containerdSkip() }, () => {
  const s = results.sluiced;
  const c = results.containerd;
  for (const t of Object.keys(TRANSPORTS)) {
    test(`${t}: (a) the shell outlives its clients; (b) the attach returns; (c) stdin_once`,
      () => {
        assert.deepEqual(s[`a-${t}`], c[`a-${t}`]);
        assert.deepEqual([s[`b-${t}`].codes, s[`b-${t}`].state], [c[`b-${t}`].codes, c[`b-${t}`].state]);
        // containerd ends the session as soon as the client's stdin ends, so
        // the answer often does not make it; sluiced waits for it (docs).
        assert.ok(s[`b-${t}`].answered >= c[`b-${t}`].answered);
        assert.deepEqual(s[`c-${t}`], c[`c-${t}`]);
      });
  }
  test('(d) the missing command: the same state, exit code, reason, start error code', () => {
    assert.deepEqual(s.d, c.d);
  });
});
