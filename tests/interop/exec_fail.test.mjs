// An exec whose binary cannot be started (issue 13 item 8) ends with the
// error on the status channel, as the kubelet reports a runtime's exec error
// (InternalError, no exit code): never runc's raw log line on stderr with a
// fake exit code 255. Checked against sluiced and then containerd 1.6 (the
// reference, private instance) with the same clients, which must agree:
//   - kubectl exec (both transports, through sluice-kube): its exit code
//     and message;
//   - WebSocket v4 (ws): the Status object; v5 too (sluiced only: the
//     streaming server of containerd 1.6 predates v5);
//   - SPDY v4 and v2 (the Go spdystream client): the error stream;
//   - ExecSync: the gRPC code and message;
//   - a tty exec (sluicectl -t) too.
// Exec ids differ between runs and runtimes; containerd's messages end with
// its error kind (": unknown"): both are normalised before comparing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { EXIT, goClientSkip, runGoClient } from './lib/goclient.mjs';
import { REPO } from './lib/hostd.mjs';
import { freePort, KubeFront, kubeSkipReason, sleep, TRANSPORTS } from './lib/kubefront.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason } from './lib/sluiced.mjs';
import { SLUICECTL, ctl } from './lib/sluicectl.mjs';
import { CH, V4, V5, connect } from './lib/session.mjs';

const NS = 'sluice-test';
const CTRD = path.join(REPO, 'scripts/containerd');
const CTRD_ENV = { SLUICE_CONTAINERD_DIR: '/run/sluice-test/containerd-execfail' };
const MISSING = ['/no/such', 'no-such-command'];
const SUITE_TIMEOUT_MS = 240000;
const results = {};

function containerdSkip() {
  if (spawnSync('containerd', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'containerd is not installed';
  return false;
}

// The same text whatever the exec id, and without containerd's error kind.
function norm(s) {
  return s.replace(/failed to start exec "[0-9a-f]+"/g, 'failed to start exec "ID"')
    .replace(/: unknown(?=\n|$)/g, '')
    .replace(/^E\d{4} [\d:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n/gm, '');
}

// A Status object with its texts normalised.
function normStatus(text) {
  const st = JSON.parse(text);
  st.message = norm(st.message);
  for (const c of st.details?.causes || []) c.message = norm(c.message);
  return st;
}

// What runc says of each missing binary: both runtimes must name it so.
function reasonRe(bin) {
  return bin.startsWith('/')
    ? new RegExp(`exec: "${bin}": stat ${bin}: no such file or directory`)
    : new RegExp(`exec: "${bin}": executable file not found in \\$PATH`);
}

// Runs every client against one runtime; resolves what each saw.
async function collect(name, cri, endpoint, tmp) {
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), `ef-${name}-`));
  const config = {
    metadata: { name: 'execfail', uid: `ef-${process.pid}-${name}`, namespace: NS, attempt: 0 },
    log_directory: logDir,
    linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  let pod;
  for (let i = 0; ; i++) { // sluiced's monitor-start flake (lib/kubefront.mjs)
    try {
      ({ pod_sandbox_id: pod } = await cri.runtime.RunPodSandbox({ config }, { deadlineMs: 60000 }));
      break;
    } catch (e) {
      if (i >= 9 || !/pod monitor did not start/.test(e.message)) throw e;
      await sleep(300);
    }
  }
  const out = { pod, logDir, r: {} };
  try {
    const { container_id: ctr } = await cri.runtime.CreateContainer({
      pod_sandbox_id: pod, sandbox_config: config,
      config: { metadata: { name: 'c', attempt: 0 }, image: { image: BUSYBOX_IMAGE },
        command: ['sleep', '100000'], log_path: 'c.log' },
    }, { deadlineMs: 30000 });
    await cri.runtime.StartContainer({ container_id: ctr }, { deadlineMs: 30000 });
    const r = out.r;
    for (const bin of MISSING) {
      const execUrl = async (opts = {}) => (await cri.runtime.Exec({ container_id: ctr, cmd: [bin],
        stdout: true, stderr: !opts.tty, tty: !!opts.tty })).url;
      // ExecSync
      try {
        const a = await cri.runtime.ExecSync({ container_id: ctr, cmd: [bin], timeout: 10 });
        r[`sync ${bin}`] = { answered: true, exit_code: a.exit_code, stderr: a.stderr.toString() };
      } catch (e) {
        r[`sync ${bin}`] = { code: e.code, details: norm(e.details) };
      }
      // WebSocket v4 (and v5 where the server has it)
      for (const proto of name === 'sluiced' ? [V4, V5] : [V4]) {
        const s = await connect((await execUrl()).replace(/^http/, 'ws'), { protocols: [proto] });
        await s.waitClosed(20000);
        r[`ws ${proto} ${bin}`] = { stdout: s.text(CH.STDOUT), stderr: s.text(CH.STDERR),
          status: normStatus(s.text(CH.ERROR)) };
      }
      // SPDY (Go spdystream client)
      if (!goClientSkip()) {
        for (const proto of ['v4.channel.k8s.io', 'v2.channel.k8s.io']) {
          const statusFile = path.join(tmp, `st-${name}-${proto}-${bin.replace(/\W/g, '')}`);
          const g = await runGoClient(['exec', '-protocols', proto, '-status-file', statusFile,
            await execUrl()]);
          const text = fs.readFileSync(statusFile, 'utf8');
          r[`spdy ${proto} ${bin}`] = { code: g.code, stdout: g.stdout.toString(),
            status: proto.startsWith('v4') ? normStatus(text) : norm(text) };
        }
      }
      // a terminal (sluicectl -t; stdin not a terminal)
      const t = await ctl(['-r', endpoint, 'exec', '-t', ctr, bin]);
      r[`sluicectl -t ${bin}`] = { code: t.code, stdout: t.stdout, stderr: norm(t.stderr) };
    }
    // kubectl through sluice-kube
    if (!kubeSkipReason()) {
      const kf = await KubeFront.start({ endpoint });
      try {
        for (const [t, env] of Object.entries(TRANSPORTS)) {
          for (const bin of MISSING) {
            const k = await kf.kubectl(['-n', NS, 'exec', 'execfail', '--', bin], { env });
            r[`kubectl ${t} ${bin}`] = { code: k.code, stdout: k.stdout.toString(),
              stderr: norm(k.stderr) };
          }
        }
      } finally {
        await kf.stop();
      }
    }
    // the container is unharmed
    const st = (await cri.runtime.ContainerStatus({ container_id: ctr })).status;
    out.state = st.state;
  } finally {
    await cri.runtime.StopPodSandbox({ pod_sandbox_id: pod }).catch(() => {});
    await cri.runtime.RemovePodSandbox({ pod_sandbox_id: pod }).catch(() => {});
    fs.rmSync(logDir, { recursive: true, force: true });
  }
  return out;
}

describe('an exec whose binary cannot be started', { timeout: SUITE_TIMEOUT_MS }, () => {
  let tmp;
  before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'execfail-')); });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('sluiced: every client gets the error, naming the binary, and no exit code',
    { skip: skipReason() || (fs.existsSync(SLUICECTL) ? false : 'no sluicectl') }, async () => {
      const sd = await SluicedInstance.start({ label: 'exfail' });
      try {
        results.sluiced = await collect('sluiced', sd.cri, sd.endpoint, tmp);
      } finally {
        await sd.stop();
      }
      const r = results.sluiced.r;
      assert.equal(results.sluiced.state, 'CONTAINER_RUNNING');
      for (const bin of MISSING) {
        const re = reasonRe(bin);
        assert.equal(r[`sync ${bin}`].code, 2, JSON.stringify(r[`sync ${bin}`])); // UNKNOWN
        assert.match(r[`sync ${bin}`].details, /^failed to exec in container: failed to start exec "ID": OCI runtime exec failed: exec failed: unable to start container process: /);
        assert.match(r[`sync ${bin}`].details, re);
        for (const proto of [V4, V5]) {
          const w = r[`ws ${proto} ${bin}`];
          assert.equal(w.stdout, '', proto);
          assert.equal(w.stderr, '', `${proto}: runc's log line must not reach stderr`);
          assert.equal(w.status.status, 'Failure');
          assert.equal(w.status.reason, 'InternalError');
          assert.equal(w.status.code, 500);
          assert.match(w.status.message, /^Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "ID": OCI runtime exec failed: /);
          assert.match(w.status.message, re);
        }
        if (!goClientSkip()) {
          const v4 = r[`spdy v4.channel.k8s.io ${bin}`];
          assert.equal(v4.code, EXIT.REMOTE);
          assert.equal(v4.stdout, '');
          assert.equal(v4.status.reason, 'InternalError');
          const v2 = r[`spdy v2.channel.k8s.io ${bin}`];
          assert.equal(v2.code, EXIT.REMOTE);
          assert.match(v2.status, /^Internal error occurred: error executing command in container: /);
          assert.match(v2.status, re);
        }
        const t = r[`sluicectl -t ${bin}`];
        assert.equal(t.code, 1, JSON.stringify(t));
        assert.equal(t.stdout, '');
        assert.match(t.stderr, re);
        if (!kubeSkipReason()) {
          for (const tr of Object.keys(TRANSPORTS)) {
            const k = r[`kubectl ${tr} ${bin}`];
            assert.equal(k.code, 1, JSON.stringify(k));
            assert.equal(k.stdout, '');
            assert.match(k.stderr, /^error: Internal error occurred: error executing command in container: /);
            assert.match(k.stderr, re);
            assert.doesNotMatch(k.stderr, /level=error|exit code 255/);
          }
        }
      }
    });

  test('containerd 1.6 (the reference) gives the same answers', { skip: containerdSkip() },
    async (t) => {
      if (!results.sluiced) {
        t.skip('the sluiced run did not complete');
        return;
      }
      const env = { ...process.env, ...CTRD_ENV, SLUICE_CONTAINERD_STREAM_PORT: String(await freePort()) };
      let startedHere = false;
      if (spawnSync(CTRD, ['status'], { env }).status !== 0) {
        const s = spawnSync(CTRD, ['start'], { env, encoding: 'utf8' });
        if (s.status !== 0) throw new Error(`scripts/containerd start: ${s.stderr}`);
        startedHere = true;
      }
      const vars = Object.fromEntries(spawnSync(CTRD, ['env'], { env, encoding: 'utf8' }).stdout
        .trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      const cri = await connectCri(vars.CONTAINERD_ENDPOINT);
      try {
        results.containerd = await collect('containerd', cri, vars.CONTAINERD_ENDPOINT, tmp);
      } finally {
        cri.close();
        if (startedHere) spawnSync(CTRD, ['stop', '--purge'], { env });
      }
      const s = results.sluiced.r;
      const c = results.containerd.r;
      assert.equal(results.containerd.state, 'CONTAINER_RUNNING');
      for (const key of Object.keys(c)) assert.deepEqual(s[key], c[key], key);
    });
});
