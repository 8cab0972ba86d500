// kubectl 1.32 logs --since, --since-time, --limit-bytes (and -p,
// --timestamps with them) and a restarted container's lastState, through
// sluice-kube, on sluiced and on containerd 1.6 (a private instance):
// what both runtimes show must agree. The pod's container "c" ran once
// (attempt 0: wrote a0 and e0, exit 3) and runs again (attempt 1: wrote
// b1, then b2 over 7 s later). Also the apiserver's 422 for log options it
// does not accept.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { REPO } from './lib/hostd.mjs';
import { freePort, KubeFront, kubeSkipReason, sleep } from './lib/kubefront.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason } from './lib/sluiced.mjs';

const NS = 'klogs';
const POD = 'restarted';
const CALL_MS = 60000;
const SINCE_GAP_MS = 7000;
// A private containerd for this file (common rules: own dir, own stream port).
const CTRD = path.join(REPO, 'scripts/containerd');
const CTRD_ENV = { SLUICE_CONTAINERD_DIR: '/run/sluice-test/containerd-ops', SLUICE_CONTAINERD_STREAM_PORT: '10137' };

// What each runtime showed, compared at the end.
const seen = {};

async function waitLog(file, re, ms = 20000) {
  const end = Date.now() + ms;
  while (!re.test(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')) {
    if (Date.now() > end) throw new Error(`${file} never matched ${re}`);
    await sleep(100);
  }
  return fs.readFileSync(file, 'utf8');
}

async function waitExited(rt, id) {
  for (let i = 0; i < 200; i++) {
    const { status } = await rt.ContainerStatus({ container_id: id });
    if (status.state === 'CONTAINER_EXITED') return status;
    await sleep(100);
  }
  throw new Error(`${id} did not exit`);
}

// The pod and its two attempts through any CRI runtime; resolves what the
// checks need.
async function makePod(rt, logDir) {
  const config = {
    metadata: { name: POD, uid: `klogs-${process.pid}-${Date.now()}`, namespace: NS, attempt: 0 },
    log_directory: logDir,
    linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  const { pod_sandbox_id: podId } = await rt.RunPodSandbox({ config }, { deadlineMs: CALL_MS });
  const ctr = async (attempt, command) => {
    const { container_id: id } = await rt.CreateContainer({ pod_sandbox_id: podId, sandbox_config: config,
      config: { metadata: { name: 'c', attempt }, image: { image: BUSYBOX_IMAGE },
        log_path: `c/${attempt}.log`, command: ['sh', '-c', command] } }, { deadlineMs: CALL_MS });
    await rt.StartContainer({ container_id: id }, { deadlineMs: CALL_MS });
    return id;
  };
  fs.mkdirSync(path.join(logDir, 'c'), { recursive: true });
  // containerd's shim copies stdout and stderr apart: a0 and e0 written at
  // once can reach the log in either order (seen), so e0 comes later.
  const a0 = await ctr(0, 'echo a0; sleep 0.5; echo e0 >&2; exit 3');
  const s0 = await waitExited(rt, a0);
  const a1 = await ctr(1, 'echo b1; until [ -f /tmp/go ]; do sleep 0.1; done; echo b2; sleep 3600');
  const f1 = path.join(logDir, 'c/1.log');
  const b1ts = (await waitLog(f1, / stdout F b1\n/)).match(/^(\S+) stdout F b1$/m)[1];
  const p = { podId, a0, a1, s0, b1ts };
  // b2, over SINCE_GAP_MS after b1; called right before the time-bound views
  p.go = async () => {
    await rt.ExecSync({ container_id: a1, cmd: ['touch', '/tmp/go'] }, { deadlineMs: CALL_MS });
    p.b2ts = (await waitLog(f1, / stdout F b2\n/)).match(/^(\S+) stdout F b2$/m)[1];
  };
  return p;
}

// Every view, as kubectl prints it; checks that hold on any runtime.
async function checkViews(kf, p, runtime) {
  const kc = async (...args) => {
    const r = await kf.kubectl(['-n', NS, ...args]);
    return [r.code, r.stdout.toString(), r.stderr];
  };
  const v = {};
  // b1 is over SINCE_GAP_MS older than b2. Each --since reaches back to a
  // second after b1, taken just before the call: b1 is left out, and b2 is
  // kept unless the call takes over SINCE_GAP_MS - 2 s to arrive (a loaded
  // machine's kubectl may take seconds to start).
  await sleep(SINCE_GAP_MS);
  await p.go();
  const sinceB1 = () => `--since=${Math.floor((Date.now() - Date.parse(p.b1ts)) / 1000) - 1}s`;
  v.since = await kc('logs', POD, sinceB1());
  const stamped = await kc('logs', POD, '--timestamps', sinceB1());
  v.all = await kc('logs', POD);
  const b2sec = Math.floor(Date.parse(p.b2ts) / 1000);
  const rfc = (sec) => new Date(sec * 1000).toISOString().replace('.000Z', 'Z');
  v.sinceTime = await kc('logs', POD, `--since-time=${rfc(b2sec)}`);
  v.sinceTimeLater = await kc('logs', POD, `--since-time=${rfc(b2sec + 1)}`);
  v.limit = await kc('logs', POD, '--limit-bytes=4');
  v.prev = await kc('logs', POD, '-p');
  v.prevLimit = await kc('logs', POD, '-p', '--limit-bytes=2');
  assert.deepEqual(v.all, [0, 'b1\nb2\n', '']);
  assert.deepEqual(v.since, [0, 'b2\n', '']);
  assert.deepEqual(v.sinceTime, [0, 'b2\n', '']);
  assert.deepEqual(v.sinceTimeLater, [0, '', '']);
  assert.deepEqual(v.limit, [0, 'b1\nb', '']);
  assert.deepEqual(v.prev, [0, 'a0\ne0\n', '']);
  assert.deepEqual(v.prevLimit, [0, 'a0', '']);
  assert.equal(stamped[1], `${p.b2ts.replace(/(\.\d+)?Z$/, (m, f) => `${(f || '.').padEnd(10, '0')}Z`)} b2\n`);
  const r = await kf.kubectl(['-n', NS, 'get', 'pod', POD, '-o', 'json']);
  const cs = JSON.parse(r.stdout).status.containerStatuses[0];
  assert.equal(cs.restartCount, 1);
  assert.ok(cs.state.running, JSON.stringify(cs.state));
  const t = cs.lastState.terminated;
  assert.ok(t, `lastState: ${JSON.stringify(cs.lastState)}`);
  assert.equal(t.exitCode, 3);
  assert.equal(t.containerID, `${runtime}://${p.a0}`);
  const sec = (ns) => new Date(Math.floor(Number(ns) / 1e9) * 1000).toISOString().replace('.000Z', 'Z');
  assert.equal(t.startedAt, sec(p.s0.started_at));
  assert.equal(t.finishedAt, sec(p.s0.finished_at));
  assert.equal(t.reason, p.s0.reason);
  v.lastState = { exitCode: t.exitCode, reason: t.reason };
  const table = (await kf.kubectl(['-n', NS, 'get', 'pods'])).stdout.toString();
  assert.match(table, new RegExp(`^${POD}\\s+1/1\\s+Running\\s+1 \\(\\d+[sm]\\d*s? ago\\)\\s+`, 'm'));
  return v;
}

function containerdSkip() {
  const base = skipReason() || kubeSkipReason();
  if (base) return base;
  if (spawnSync('containerd', ['--version'], { stdio: 'ignore' }).status !== 0) return 'containerd is not installed';
  return false;
}

describe('kubectl logs --since/--since-time/--limit-bytes and lastState, on sluiced', { skip: skipReason() || kubeSkipReason() }, () => {
  let sd;
  let kf;
  let p;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'klogs' });
    const logDir = path.join(sd.logRoot, 'restarted');
    p = await makePod(sd.rt, logDir);
    sd.podIds.add(p.podId);
    kf = await KubeFront.start({ endpoint: sd.endpoint });
  }, { timeout: 90000 });
  after(async () => {
    kf?.destroy();
    await sd?.destroy();
  }, { timeout: 60000 });

  test('the views and lastState', async () => {
    seen.sluiced = await checkViews(kf, p, 'sluice');
    assert.equal(seen.sluiced.lastState.reason, 'Error');
  });

  test('log options the apiserver refuses: 422 Invalid with its messages; unparsable ones 400', async () => {
    const base = `/api/v1/namespaces/${NS}/pods/${POD}/log?container=c`;
    const cases = [
      ['&sinceSeconds=0', 422, 'PodLogOptions "restarted" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0'],
      ['&limitBytes=0&tailLines=-1', 422, 'PodLogOptions "restarted" is invalid: [tailLines: Invalid value: -1: ' +
        'must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]'],
      ['&sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z', 422, 'at most one of `sinceTime` or `sinceSeconds` may be specified'],
      ['&sinceTime=yesterday', 400, 'sinceTime an RFC 3339 time'],
      ['&limitBytes=x', 400, 'must be integers'],
    ];
    for (const [q, code, msg] of cases) {
      const r = await kf.request(base + q);
      assert.equal(r.status, code, q);
      const st = JSON.parse(r.body);
      assert.equal(st.kind, 'Status');
      assert.equal(st.code, code);
      assert.ok(st.message.includes(msg), `${q}: ${st.message}`);
      if (code === 422) assert.deepEqual([st.reason, st.details.kind], ['Invalid', 'PodLogOptions']);
    }
    const r = await kf.kubectl(['-n', NS, 'logs', POD, '--since=1s', '--since-time=2020-01-01T00:00:00Z']);
    assert.notEqual(r.code, 0, 'kubectl refuses both itself');
  });
});

describe('kubectl logs --since/--since-time/--limit-bytes and lastState, on containerd 1.6 (the same)', { skip: containerdSkip() }, () => {
  let cri;
  let kf;
  let p;
  let startedHere = false;
  let logDir;
  const env = { ...process.env, ...CTRD_ENV };
  before(async () => {
    if (spawnSync(CTRD, ['status'], { env }).status !== 0) {
      const s = spawnSync(CTRD, ['start'], { env, encoding: 'utf8', timeout: 120000 });
      assert.equal(s.status, 0, s.stderr);
      startedHere = true;
    }
    const vars = Object.fromEntries(spawnSync(CTRD, ['env'], { env, encoding: 'utf8' }).stdout
      .trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    cri = await connectCri(vars.CONTAINERD_ENDPOINT);
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klogs-ctrd-'));
    p = await makePod(cri.runtime, logDir);
    kf = await KubeFront.start({ endpoint: vars.CONTAINERD_ENDPOINT });
  }, { timeout: 150000 });
  after(async () => {
    kf?.destroy();
    if (cri && p) {
      await cri.runtime.StopPodSandbox({ pod_sandbox_id: p.podId }).catch(() => {});
      await cri.runtime.RemovePodSandbox({ pod_sandbox_id: p.podId }).catch(() => {});
    }
    cri?.close();
    if (startedHere) spawnSync(CTRD, ['stop'], { env, stdio: 'ignore', timeout: 60000 });
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  }, { timeout: 90000 });

  test('the views and lastState, equal to sluiced\'s', async () => {
    seen.containerd = await checkViews(kf, p, 'containerd');
    if (seen.sluiced) assert.deepEqual(seen.containerd, seen.sluiced, 'both runtimes show the same');
  });
});
