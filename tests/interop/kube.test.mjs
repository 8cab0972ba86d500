// The stock kubectl (1.32) against sluiced through sluice-kube, once per
// kubectl transport: WebSocket first (default; front with TLS and a bearer
// token) and SPDY only (KUBECTL_*_WEBSOCKETS=false; plain-HTTP front):
// get, exec (exit codes, split streams, stdin EOF, a real terminal with a
// resize, 64 MiB), attach, port-forward (8 x 32 MiB), logs (-f), cp; then
// bad input and a smoke of the same against containerd.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { REPO } from './lib/hostd.mjs';
import {
  freePort, httpHash, KubeFront, kubeSkipReason, runPodRetry, sha256, sleep, stopSluiced,
  TRANSPORTS, waitListening, waitOutput,
} from './lib/kubefront.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason } from './lib/sluiced.mjs';

const NS = 'sluice-test';
const BIG = 64 * 1024 * 1024;
const BLOB = 32 * 1024 * 1024;
const DOWNLOADS = 8;
const SUITE_TIMEOUT_MS = 170000;

// The command's stderr as kubectl printed it, without kubectl's own klog
// line for the server's empty "connected" message on stdout (protocol
// notes §6: the kubelet sends it too) when that message arrives before
// kubectl 1.32 has created its stdout stream (it discards the empty message).
function commandStderr(r) {
  return r.stderr.replace(/^E\d{4} [\d:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n/gm, '');
}

function tmuxMissing() {
  return spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status !== 0 ? 'tmux is not installed' : false;
}
const skip = skipReason() || kubeSkipReason();

// The pods the tests use, all made up front (host network: no CNI
// needed). Per transport: a reader for attach, a ticker for logs -f that
// starts ticking when /tmp/go appears, a victim to stop mid-session.
async function makePods(sd, httpPort) {
  const pods = {};
  pods.web = await runPodRetry(sd, 'web', { hostNetwork: true, labels: { app: 'web' } });
  await sd.runContainer(pods.web, 'c', {
    command: ['sh', '-c',
      // (sleeps: stdout and stderr are two pipes; keep the log's order known)
      `echo hello; sleep 0.2; echo oops >&2; sleep 0.2; head -c 40000 /dev/zero | tr '\\0' a; echo; ` +
      `head -c ${BLOB} /dev/urandom > /tmp/blob; head -c 1048583 /dev/urandom > /tmp/small; ` +
      `touch /tmp/ready; exec httpd -f -p 127.0.0.1:${httpPort} -h /tmp`],
  });
  for (const t of Object.keys(TRANSPORTS)) {
    pods[`reader-${t}`] = await runPodRetry(sd, `reader-${t}`, { hostNetwork: true });
    await sd.runContainer(pods[`reader-${t}`], 'r', {
      stdin: true,
      command: ['sh', '-c', 'while read l; do echo "got:$l"; [ "$l" = quit ] && exit 0; done'],
    });
    pods[`ticker-${t}`] = await runPodRetry(sd, `ticker-${t}`, { hostNetwork: true });
    await sd.runContainer(pods[`ticker-${t}`], 't', {
      command: ['sh', '-c', 'until [ -f /tmp/go ]; do sleep 0.1; done; ' +
        'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done'],
    });
    pods[`victim-${t}`] = await runPodRetry(sd, `victim-${t}`, { hostNetwork: true });
    await sd.runContainer(pods[`victim-${t}`], 'v', { command: ['sleep', '100000'] });
  }
  return pods;
}

async function waitReady(kf, pod) {
  for (let i = 0; i < 200; i++) {
    const r = await kf.kubectl(['-n', NS, 'exec', pod, '--', 'test', '-f', '/tmp/ready']);
    if (r.code === 0) return;
    await sleep(250);
  }
  throw new Error(`${pod}: /tmp/ready never appeared`);
}

describe('kubectl through sluice-kube on sluiced', { skip, timeout: SUITE_TIMEOUT_MS }, () => {
  let sd;
  const fronts = {};
  let httpPort;
  let pods;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sk-test-'));

  before(async () => {
    sd = await SluicedInstance.start({ label: 'kube' });
    httpPort = await freePort();
    pods = await makePods(sd, httpPort);
    fronts.websocket = await KubeFront.start({ endpoint: sd.endpoint, token: 'tok-' + process.pid, tls: true });
    fronts.spdy = await KubeFront.start({ endpoint: sd.endpoint });
    await waitReady(fronts.spdy, 'web');
    await waitListening(httpPort);
  }, { timeout: 60000 });

  after(async () => {
    for (const kf of Object.values(fronts)) kf.destroy();
    if (sd) await sd.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  }, { timeout: 60000 });

  for (const [transport, env] of Object.entries(TRANSPORTS)) {
    describe(`transport ${transport}`, () => {
      const kc = (args, opts = {}) => fronts[transport].kubectl(args, { env, ...opts });

      test('get pods: the table, -A, -o wide and -o json', async () => {
        let r = await kc(['get', 'pods', '-n', NS]);
        assert.equal(r.code, 0, r.stderr);
        const lines = r.stdout.toString().trim().split('\n');
        assert.match(lines[0], /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
        assert.match(lines.find((l) => l.startsWith('web ')), /^web\s+1\/1\s+Running\s+0\s+\d+[sm]/);
        r = await kc(['get', 'pods', '-A']);
        assert.match(r.stdout.toString(), new RegExp(`^${NS}\\s+web\\s+1/1\\s+Running`, 'm'));
        r = await kc(['get', 'pods', '-n', NS, '-o', 'wide']);
        assert.match(r.stdout.toString(), /web\s+1\/1\s+Running\s+0\s+\S+\s+\S+\s+sluice-node/);
        r = await kc(['get', 'pod', 'web', '-n', NS, '-o', 'json']);
        assert.equal(r.code, 0, r.stderr);
        const pod = JSON.parse(r.stdout);
        assert.equal(pod.kind, 'Pod');
        assert.equal(pod.metadata.namespace, NS);
        assert.equal(pod.metadata.labels.app, 'web');
        assert.match(pod.metadata.uid, /^uid-/);
        assert.equal(pod.status.phase, 'Running');
        const cs = pod.status.containerStatuses[0];
        assert.equal(cs.name, 'c');
        assert.equal(cs.image, BUSYBOX_IMAGE);
        assert.match(cs.containerID, /^sluice:\/\/[0-9a-f]{64}$/);
        assert.ok(cs.ready && cs.state.running.startedAt);
        r = await kc(['get', 'pods', '-n', NS, '-o', 'json']);
        const list = JSON.parse(r.stdout);
        assert.equal(list.kind, 'List');
        assert.ok(list.items.some((p) => p.metadata.name === 'web'));
      });

      test('exec: exit codes 0, 3 and 255 become kubectl\'s; stdout and stderr apart', async () => {
        for (const code of [0, 3, 255]) {
          const r = await kc(['-n', NS, 'exec', 'web', '--', 'sh', '-c',
            `echo to-out; echo to-err >&2; exit ${code}`]);
          assert.equal(r.code, code, r.stderr);
          assert.equal(r.stdout.toString(), 'to-out\n');
          assert.match(commandStderr(r), /^to-err\n/);
          if (code) assert.match(r.stderr, new RegExp(`command terminated with exit code ${code}`));
        }
      });

      test('exec -i: piped stdin reaches the command, EOF included', async () => {
        const input = Buffer.alloc(3 * 1024 * 1024 + 7, 'z');
        const r = await kc(['-n', NS, 'exec', '-i', 'web', '--', 'sh', '-c', 'wc -c; echo done'],
          { input });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.toString().replace(/ +/g, ''), `${input.length}\ndone\n`);
      });

      test('exec: 64 MiB of output arrive intact (sha256)', async () => {
        // tee: the data on stdout, its sha256 (from the pod) on stderr.
        const r = await kc(['-n', NS, 'exec', 'web', '--', 'sh', '-c',
          `{ head -c ${BIG} /dev/urandom | tee /dev/fd/3 | sha256sum >&2; } 3>&1`],
        { timeoutMs: 90000 });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.length, BIG);
        assert.equal(sha256(r.stdout), r.stderr.split(' ')[0]);
      });

      test('exec -it in a real terminal (tmux): a prompt, and a resize seen by stty size',
        { skip: tmuxMissing() }, async () => {
          const kf = fronts[transport];
          const sock = `sk-${process.pid}-${transport}`;
          const tm = (...a) => spawnSync('tmux', ['-L', sock, ...a], { encoding: 'utf8' });
          const envs = Object.entries({ ...env, KUBECONFIG: kf.kubeconfig })
            .map(([k, v]) => `${k}=${v}`);
          const cmd = ['env', ...envs, 'kubectl', '--cache-dir', kf.cacheDir, '-n', NS, 'exec',
            '-it', 'web', '--', 'sh'].join(' ');
          assert.equal(tm('new-session', '-d', '-x', '80', '-y', '24', cmd).status, 0);
          try {
            const screen = () => tm('capture-pane', '-p').stdout;
            const waitScreen = async (re, what) => {
              for (let i = 0; i < 100; i++) {
                if (re.test(screen())) return;
                await sleep(100);
              }
              throw new Error(`${what}: screen is ${JSON.stringify(screen())}`);
            };
            await waitScreen(/[#$]\s*$/m, 'prompt');
            tm('send-keys', 'stty size', 'Enter');
            await waitScreen(/^24 80\s*$/m, 'first size');
            tm('resize-window', '-x', '100', '-y', '30');
            await sleep(300);
            tm('send-keys', 'clear; stty size', 'Enter');
            await waitScreen(/^30 100\s*$/m, 'size after the resize');
            tm('send-keys', 'exit 7', 'Enter');
            for (let i = 0; i < 100 && tm('has-session').status === 0; i++) await sleep(100);
          } finally {
            tm('kill-server');
          }
        });

      test('attach -i: stdin to a container that reads it, its answers back', async () => {
        const r = await kc(['-n', NS, 'attach', '-i', `reader-${transport}`],
          { stdinStream: async (p) => {
            p.stdin.write('hello\n');
            await sleep(500);
            p.stdin.write('quit\n');
          } });
        assert.match(r.stdout.toString(), /got:hello\n(.*\n)*got:quit\n/);
        assert.equal(r.code, 0, r.stderr);
      });

      test(`port-forward: ${DOWNLOADS} concurrent 32 MiB downloads, sha256 each`, async () => {
        const sum = await kc(['-n', NS, 'exec', 'web', '--', 'sha256sum', '/tmp/blob']);
        const want = sum.stdout.toString().split(' ')[0];
        const p = fronts[transport].spawnKubectl(['-n', NS, 'port-forward', '--address',
          '127.0.0.1', 'pod/web', `:${httpPort}`], { env });
        let stderr = '';
        p.stderr.on('data', (d) => { stderr += d; });
        try {
          const m = await waitOutput(p.stdout, /Forwarding from 127\.0\.0\.1:(\d+) ->/);
          const local = Number(m[1]);
          const res = await Promise.all(Array.from({ length: DOWNLOADS },
            () => httpHash(local, '/blob')));
          for (const r of res) {
            assert.equal(r.status, 200);
            assert.equal(r.length, BLOB);
            assert.equal(r.sha256, want);
          }
          assert.doesNotMatch(stderr, /error/i);
        } finally {
          p.kill('SIGTERM');
        }
      });

      test('logs: whole lines (P/F joined), --tail, --timestamps', async () => {
        let r = await kc(['-n', NS, 'logs', 'web']);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.toString(), `hello\noops\n${'a'.repeat(40000)}\n`);
        r = await kc(['-n', NS, 'logs', 'web', '--tail=2']);
        const tail = r.stdout.toString();
        assert.equal(tail, `oops\n${'a'.repeat(40000)}\n`, 'two whole lines');
        r = await kc(['-n', NS, 'logs', 'web', '--timestamps']);
        const lines = r.stdout.toString().split('\n');
        assert.match(lines[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z hello$/);
        assert.match(lines[2], /^\S+ a{40000}$/);
      });

      test('logs -f: follows until the container exits', async () => {
        const name = `ticker-${transport}`;
        const p = fronts[transport].spawnKubectl(['-n', NS, 'logs', '-f', name], { env });
        let out = '';
        let err = '';
        p.stdout.on('data', (d) => { out += d; });
        p.stderr.on('data', (d) => { err += d; });
        const exited = new Promise((resolve) => p.on('close', (code) => resolve(code)));
        await sleep(500); // following an empty log
        const t = await kc(['-n', NS, 'exec', name, '--', 'touch', '/tmp/go']);
        assert.equal(t.code, 0, t.stderr);
        const code = await Promise.race([exited, sleep(20000).then(() => 'hung')]);
        if (code === 'hung') p.kill('SIGKILL');
        assert.equal(code, 0, err);
        assert.equal(out, [1, 2, 3, 4, 5, 6].map((i) => `tick ${i}\n`).join(''));
      });

      test('cp: into the pod and out of it, sha256 checked', async () => {
        const up = path.join(tmp, `up-${transport}.bin`);
        fs.writeFileSync(up, crypto.randomBytes(2 * 1024 * 1024 + 3));
        let r = await kc(['cp', up, `${NS}/web:/tmp/up.bin`]);
        assert.equal(r.code, 0, r.stderr);
        r = await kc(['-n', NS, 'exec', 'web', '--', 'sha256sum', '/tmp/up.bin']);
        assert.equal(r.stdout.toString().split(' ')[0], sha256(fs.readFileSync(up)));
        const down = path.join(tmp, `down-${transport}.bin`);
        r = await kc(['cp', `${NS}/web:/tmp/small`, down]);
        assert.equal(r.code, 0, r.stderr);
        const sum = await kc(['-n', NS, 'exec', 'web', '--', 'sha256sum', '/tmp/small']);
        assert.equal(sha256(fs.readFileSync(down)), sum.stdout.toString().split(' ')[0]);
      });

      test('bad input: what kubectl users see from a real cluster', async () => {
        let r = await kc(['-n', NS, 'exec', 'nosuch', '--', 'true']);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /Error from server \(NotFound\): pods "nosuch" not found/);
        r = await kc(['-n', NS, 'exec', 'web', '-c', 'nope', '--', 'true']);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /container nope is not valid for pod web/);
        r = await kc(['-n', NS, 'logs', 'web', '-c', 'nope']);
        assert.match(r.stderr, /container nope is not valid for pod web/); // kubectl checks it itself
        r = await kc(['-n', NS, 'logs', 'nosuch']); // kubectl adds 'in namespace "…"' itself
        assert.match(r.stderr, /error from server \(NotFound\): pods "nosuch" not found/i);
        r = await kc(['-n', NS, 'port-forward', 'pod/nosuch', '1234']);
        assert.match(r.stderr, /pods "nosuch" not found/);
        r = await kc(['-n', NS, 'exec', 'web', '--', '/no/such/binary']);
        assert.notEqual(r.code, 0);
        r = await kc(['get', 'pods', '-n', NS]);
        assert.equal(r.code, 0, 'the front keeps serving');
      });

      test('a pod stopped mid-session ends the session, the front keeps serving', async () => {
        const name = `victim-${transport}`;
        const pod = pods[name];
        const p = fronts[transport].spawnKubectl(['-n', NS, 'exec', '-i', name, '--', 'sh', '-c',
          'echo started; cat'], { env });
        await waitOutput(p.stdout, /started/);
        const exited = new Promise((resolve) => p.on('exit', (code) => resolve(code)));
        await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id }, { deadlineMs: 30000 });
        const code = await Promise.race([exited, sleep(20000).then(() => 'hung')]);
        assert.notEqual(code, 'hung', 'kubectl exec must end when its pod stops');
        const r = await kc(['get', 'pod', name, '-n', NS, '-o', 'json']);
        assert.equal(r.code, 0, r.stderr);
        assert.notEqual(JSON.parse(r.stdout).status.phase, 'Running');
      });
    });
  }

  test('raw API: discovery, 401 without the token, Status JSON for 400/404/405', async () => {
    const kf = fronts.websocket;
    let r = await kf.request('/version');
    assert.equal(JSON.parse(r.body).major, '1');
    r = await kf.request('/api/v1', {});
    const names = JSON.parse(r.body).resources.map((x) => x.name);
    for (const n of ['pods', 'pods/exec', 'pods/attach', 'pods/portforward', 'pods/log'])
      assert.ok(names.includes(n), n);
    r = await kf.request('/apis');
    assert.deepEqual(JSON.parse(r.body).groups, []);
    r = await kf.request('/api/v1/pods', { token: 'wrong' });
    assert.equal(r.status, 401);
    assert.equal(JSON.parse(r.body).reason, 'Unauthorized');
    r = await kf.request(`/api/v1/namespaces/${NS}/pods/web/exec?command=true`, { method: 'POST' });
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.body).message, 'you must specify at least 1 of stdin, stdout, stderr');
    r = await kf.request(`/api/v1/namespaces/${NS}/pods/web/exec?stdout=true`, { method: 'POST' });
    assert.equal(r.status, 400);
    r = await kf.request(`/api/v1/namespaces/${NS}/pods/web`, { method: 'DELETE' });
    assert.equal(r.status, 405);
    assert.equal(JSON.parse(r.body).kind, 'Status');
    r = await kf.request('/apis/apps/v1/deployments');
    assert.equal(r.status, 404);
    assert.equal(JSON.parse(r.body).code, 404);
    // A CRI error, mapped as the kubelet maps it: the ticker has exited.
    r = await kf.request(`/api/v1/namespaces/${NS}/pods/ticker-websocket/exec?command=true&stdout=true`,
      { method: 'POST', headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1',
        'x-stream-protocol-version': 'v4.channel.k8s.io' } });
    assert.ok([404, 500].includes(r.status), `${r.status} ${r.body}`);
    assert.match(JSON.parse(r.body).message, /^rpc error: code = \w+ desc = /);
  });

  test('raw garbage and an over-long head get 400/431; the front keeps serving', async () => {
    const kf = fronts.spdy;
    const send = (bytes) => new Promise((resolve) => {
      const s = net.connect(kf.port, '127.0.0.1', () => s.end(bytes));
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('close', () => resolve(got));
      s.on('error', () => resolve(got));
    });
    assert.match(await send('GARBAGE\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await send(`GET /api HTTP/1.1\r\nX: ${'a'.repeat(70000)}\r\n\r\n`),
      /^HTTP\/1\.1 (400|431) /);
    const r = await kf.kubectl(['get', 'pods', '-n', NS]);
    assert.equal(r.code, 0, r.stderr);
  });

  test('both fronts exit 0 on SIGTERM', async () => {
    for (const kf of Object.values(fronts)) await kf.stop();
  });

  test('sluiced stops clean', async (t) => {
    await stopSluiced(sd, t);
    sd = null;
  }, { timeout: 60000 });
});

// ---- the same through containerd (the Go kubelet streaming library) ----

const CTRD = path.join(REPO, 'scripts/containerd');
function containerdSkip() {
  if (process.getuid?.() !== 0) return 'needs root';
  if (spawnSync('containerd', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'containerd is not installed';
  return kubeSkipReason();
}

describe('kubectl through sluice-kube on containerd (smoke)', { skip: containerdSkip(), timeout: 120000 }, () => {
  let cri;
  let kf;
  let startedHere = false;
  let logDir;
  const pods = [];
  let httpPort;

  before(async () => {
    const env = { ...process.env };
    if (spawnSync(CTRD, ['status']).status !== 0) {
      env.SLUICE_CONTAINERD_STREAM_PORT = String(await freePort());
      const s = spawnSync(CTRD, ['start'], { env, encoding: 'utf8' });
      if (s.status !== 0) throw new Error(`scripts/containerd start: ${s.stderr}`);
      startedHere = true;
    }
    const vars = Object.fromEntries(spawnSync(CTRD, ['env'], { env, encoding: 'utf8' }).stdout
      .trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    cri = await connectCri(vars.CONTAINERD_ENDPOINT);
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sk-ctrd-logs-'));
    const config = {
      metadata: { name: 'cweb', uid: `sk-${process.pid}`, namespace: NS, attempt: 0 },
      log_directory: logDir,
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
    const { pod_sandbox_id: id } = await cri.runtime.RunPodSandbox({ config }, { deadlineMs: 60000 });
    pods.push(id);
    httpPort = await freePort();
    const { container_id } = await cri.runtime.CreateContainer({
      pod_sandbox_id: id, sandbox_config: config,
      config: {
        metadata: { name: 'c', attempt: 0 }, image: { image: BUSYBOX_IMAGE }, log_path: 'c.log',
        command: ['sh', '-c', `echo hello; head -c 4194304 /dev/urandom > /tmp/blob; ` +
          `exec httpd -f -p 127.0.0.1:${httpPort} -h /tmp`],
      },
    }, { deadlineMs: 30000 });
    await cri.runtime.StartContainer({ container_id }, { deadlineMs: 30000 });
    kf = await KubeFront.start({ endpoint: vars.CONTAINERD_ENDPOINT, token: 'ctrd', tls: true });
    await waitListening(httpPort);
  }, { timeout: 90000 });

  after(async () => {
    kf?.destroy();
    if (cri) {
      for (const id of pods) {
        await cri.runtime.StopPodSandbox({ pod_sandbox_id: id }).catch(() => {});
        await cri.runtime.RemovePodSandbox({ pod_sandbox_id: id }).catch(() => {});
      }
      cri.close();
    }
    if (startedHere) spawnSync(CTRD, ['stop']);
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  }, { timeout: 60000 });

  for (const [transport, env] of Object.entries(TRANSPORTS)) {
    test(`${transport}: get, exec (code, streams, stdin), logs, port-forward, cp`, async () => {
      const kc = (args, opts = {}) => kf.kubectl(args, { env, ...opts });
      let r = await kc(['get', 'pods', '-n', NS]);
      assert.match(r.stdout.toString(), /^cweb\s+1\/1\s+Running/m);
      r = await kc(['get', 'pod', 'cweb', '-n', NS, '-o', 'json']);
      assert.match(JSON.parse(r.stdout).status.containerStatuses[0].containerID, /^containerd:\/\//);
      r = await kc(['-n', NS, 'exec', 'cweb', '--', 'sh', '-c', 'echo o; echo e >&2; exit 3']);
      assert.equal(r.code, 3);
      assert.equal(r.stdout.toString(), 'o\n');
      assert.match(commandStderr(r), /^e\n/);
      r = await kc(['-n', NS, 'exec', '-i', 'cweb', '--', 'wc', '-c'], { input: 'x'.repeat(100000) });
      assert.equal(r.stdout.toString().trim(), '100000');
      r = await kc(['-n', NS, 'logs', 'cweb']);
      assert.equal(r.stdout.toString(), 'hello\n');
      const sum = (await kc(['-n', NS, 'exec', 'cweb', '--', 'sha256sum', '/tmp/blob'])).stdout
        .toString().split(' ')[0];
      const p = kf.spawnKubectl(['-n', NS, 'port-forward', '--address', '127.0.0.1', 'pod/cweb',
        `:${httpPort}`], { env });
      try {
        const m = await waitOutput(p.stdout, /Forwarding from 127\.0\.0\.1:(\d+) ->/);
        const res = await Promise.all([1, 2].map(() => httpHash(Number(m[1]), '/blob')));
        for (const x of res) assert.equal(x.sha256, sum);
      } finally {
        p.kill('SIGTERM');
      }
      const down = path.join(logDir, `down-${transport}`);
      r = await kc(['cp', `${NS}/cweb:/tmp/blob`, down]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(sha256(fs.readFileSync(down)), sum);
    });
  }

  test('front exits 0 on SIGTERM', async () => {
    await kf.stop();
    kf = null;
  });
});
