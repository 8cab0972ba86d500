// The reference peers against each other, without sluice: Debian's
// containerd 1.6 (CRI + the Go kubelet streaming server) driven through
// lib/cri.mjs, and the Go spdystream client (build-go/spdyclient) driven
// against containerd's streaming server. This pins what the reference
// implementation does, so sluice's own suites can be compared with it.
//
// Skips (with the reason) when containerd/runc/busybox-static or, for the
// SPDY part, go/spdystream are not installed. Stops the containerd it started.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connectCri, status as grpcStatus } from './lib/cri.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = path.join(REPO, 'scripts/containerd');
const GO_BUILD = path.join(REPO, 'scripts/go-client');
const CLIENT = path.join(REPO, 'build-go/spdyclient');
const BUSYBOX_IMAGE = 'localhost/sluice/busybox:latest';
const PAUSE_IMAGE = 'localhost/sluice/pause:latest';
const URL_RE = (kind) => new RegExp(`^http://127\\.0\\.0\\.1:\\d+/${kind}/[A-Za-z0-9_-]{8}$`);
const CLIENT_TIMEOUT_MS = 30000;
const START_TIMEOUT_MS = 120000;
const BUILD_TIMEOUT_MS = 300000;
const PF_CONNECTIONS = 5;
const PF_BIG_BYTES = 256 * 1024;
const RAW_WAIT_MS = 3000;

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function containerdSkipReason() {
  if (process.getuid && process.getuid() !== 0) return 'containerd needs root';
  for (const c of ['containerd', 'ctr', 'runc'])
    if (!have(c)) return `${c} not installed (apt-get install containerd runc)`;
  if (!existsSync('/bin/busybox')) return 'busybox-static not installed';
  return false;
}

function goSkipReason() {
  if (!have('go')) return 'go not installed (apt-get install golang-go)';
  if (!existsSync('/usr/share/gocode/src/github.com/moby/spdystream'))
    return 'spdystream not installed (apt-get install golang-github-docker-spdystream-dev)';
  return false;
}

function run(cmd, args, { env, timeoutMs = START_TIMEOUT_MS } = {}) {
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, encoding: 'utf8', timeout: timeoutMs });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Runs spdyclient; input (if any) is written then stdin is closed.
function runClient(args, { input } = {}) {
  return new Promise((resolve) => {
    const p = spawn(CLIENT, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let stderr = '';
    p.stdout.on('data', (d) => out.push(d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), CLIENT_TIMEOUT_MS);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdoutBuf = Buffer.concat(out);
      resolve({ code, signal, stdout: stdoutBuf.toString('utf8'), stdoutBuf, stderr });
    });
    p.stdin.on('error', () => {}); // the client may exit before reading it all
    if (input !== undefined) p.stdin.write(input);
    p.stdin.end();
  });
}

// One raw HTTP/1.1 request. Resolves with the response head (+ body) as
// latin1 once it is complete: a 101 head, a Content-Length body, the server
// closing, or RAW_WAIT_MS of silence.
function rawRequest(url, method, headers) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname);
    let buf = Buffer.alloc(0);
    const finish = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(buf.toString('latin1'));
    };
    const timer = setTimeout(finish, RAW_WAIT_MS);
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const text = buf.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (/^HTTP\/1\.1 101 /.test(text)) return finish();
      const len = text.slice(0, end).match(/\r\nContent-Length: (\d+)/i);
      if (len && buf.length >= end + 4 + Number(len[1])) finish();
    });
    s.on('end', finish);
    s.on('error', reject);
    const head = [`${method} ${u.pathname} HTTP/1.1`, `Host: ${u.host}`, ...headers, '', ''];
    s.write(head.join('\r\n'));
  });
}

const WS_HEADERS = [
  'Connection: Upgrade',
  'Upgrade: websocket',
  'Sec-WebSocket-Version: 13',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
];
const SPDY_HEADERS = ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'Content-Length: 0'];

// A skipped describe counts no test; a test that calls t.skip() does.
function skippable(name, reason, body) {
  if (reason) test(name, (t) => t.skip(reason));
  else describe(name, body);
}

skippable('reference containerd 1.6 (CRI + Go streaming server)', containerdSkipReason(), () => {
  const st = { startedHere: false, env: {}, cri: null, pods: [] };
  const uid = `sluice-ref-${process.pid}-${Date.now()}`;
  let pod, sandboxConfig, sleeper, echoPort, logDir;

  before(async () => {
    logDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-ctrd-logs-'));
    const running = spawnSync(SCRIPT, ['status']).status === 0;
    const port = running ? undefined : String(await freePort());
    const env = port ? { SLUICE_CONTAINERD_STREAM_PORT: port } : {};
    if (!running) {
      run(SCRIPT, ['start'], { env });
      st.startedHere = true;
    }
    for (const line of run(SCRIPT, ['env'], { env }).trim().split('\n')) {
      const i = line.indexOf('=');
      st.env[line.slice(0, i)] = line.slice(i + 1);
    }
    st.cri = await connectCri(st.env.CONTAINERD_ENDPOINT);

    sandboxConfig = {
      metadata: { name: 'ref', uid, namespace: 'sluice-test', attempt: 0 },
      log_directory: logDir,
      labels: { 'io.kubernetes.pod.uid': uid },
      annotations: { 'sluice.test/purpose': 'reference-peer' },
      // Host network, and so no hostname (containerd rejects one here).
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
    ({ pod_sandbox_id: pod } = await st.cri.runtime.RunPodSandbox({ config: sandboxConfig }));
    st.pods.push(pod);
    sleeper = await startContainer('sleeper', ['sleep', '3600']);
    echoPort = await freePort();
    await startContainer('echo', ['nc', '-ll', '-p', String(echoPort), '-e', 'cat']);
    await waitListening(echoPort);
  }, { timeout: START_TIMEOUT_MS });

  after(async () => {
    if (st.cri) {
      for (const id of st.pods) {
        await st.cri.runtime.StopPodSandbox({ pod_sandbox_id: id }).catch(() => {});
        await st.cri.runtime.RemovePodSandbox({ pod_sandbox_id: id }).catch(() => {});
      }
      st.cri.close();
    }
    if (st.startedHere) run(SCRIPT, ['stop']);
    if (logDir) await rm(logDir, { recursive: true, force: true });
  }, { timeout: START_TIMEOUT_MS });

  async function startContainer(name, command, extra = {}) {
    const { container_id } = await st.cri.runtime.CreateContainer({
      pod_sandbox_id: pod,
      sandbox_config: sandboxConfig,
      config: {
        metadata: { name, attempt: 0 },
        image: { image: BUSYBOX_IMAGE },
        command,
        log_path: `${name}.log`,
        ...extra,
      },
    });
    await st.cri.runtime.StartContainer({ container_id });
    return container_id;
  }

  async function waitListening(port) {
    for (let i = 0; i < 100; i++) {
      const ok = await new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
        s.on('error', () => resolve(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`nothing listens on ${port}`);
  }

  async function execUrl(cmd, { tty = false, stdin = false, stdout = true, stderr = !tty } = {}) {
    const r = await st.cri.runtime.Exec({ container_id: sleeper, cmd, tty, stdin, stdout, stderr });
    return r.url;
  }

  async function pfUrl() {
    return (await st.cri.runtime.PortForward({ pod_sandbox_id: pod })).url;
  }

  describe('CRI over grpc-js', () => {
    test('Version: all four fields set, runtime.v1', async () => {
      const v = await st.cri.runtime.Version({ version: '' });
      assert.equal(v.runtime_name, 'containerd');
      assert.equal(v.runtime_api_version, 'v1');
      assert.ok(v.version && v.runtime_version, JSON.stringify(v));
    });

    test('Status: RuntimeReady true; NetworkReady false without CNI', async () => {
      const { status } = await st.cri.runtime.Status({ verbose: false });
      const cond = Object.fromEntries(status.conditions.map((c) => [c.type, c]));
      assert.equal(cond.RuntimeReady.status, true);
      assert.equal(cond.NetworkReady.status, false, 'no CNI config: host-network pods only');
    });

    test('images: both local images listed; absent image → unset, not an error', async () => {
      const { images } = await st.cri.image.ListImages({});
      const tags = images.flatMap((i) => i.repo_tags);
      assert.ok(tags.includes(BUSYBOX_IMAGE) && tags.includes(PAUSE_IMAGE), tags.join(' '));
      const present = await st.cri.image.ImageStatus({ image: { image: BUSYBOX_IMAGE } });
      assert.match(present.image.id, /^sha256:[0-9a-f]{64}$/);
      const absent = await st.cri.image.ImageStatus({ image: { image: 'localhost/sluice/absent:latest' } });
      assert.equal(absent.image, null);
    });

    test('host-network sandbox is READY and found by its pod-uid label', async () => {
      const { status } = await st.cri.runtime.PodSandboxStatus({ pod_sandbox_id: pod });
      assert.equal(status.state, 'SANDBOX_READY');
      assert.deepEqual(status.metadata, sandboxConfig.metadata);
      assert.deepEqual(status.annotations, sandboxConfig.annotations);
      assert.notEqual(status.created_at, '0');
      const { items } = await st.cri.runtime.ListPodSandbox({
        filter: { label_selector: { 'io.kubernetes.pod.uid': uid } },
      });
      assert.deepEqual(items.map((i) => i.id), [pod]);
    });

    test('container RUNNING and listed in its sandbox', async () => {
      const { status } = await st.cri.runtime.ContainerStatus({ container_id: sleeper });
      assert.equal(status.state, 'CONTAINER_RUNNING');
      assert.equal(status.metadata.name, 'sleeper');
      assert.ok(status.image_ref, 'image_ref set');
      const { containers } = await st.cri.runtime.ListContainers({ filter: { pod_sandbox_id: pod } });
      assert.ok(containers.some((c) => c.id === sleeper));
    });

    test('ExecSync: stdout, stderr and exit code', async () => {
      const r = await st.cri.runtime.ExecSync({
        container_id: sleeper, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 3'], timeout: 10,
      });
      assert.equal(r.stdout.toString(), 'out\n');
      assert.equal(r.stderr.toString(), 'err\n');
      assert.equal(r.exit_code, 3);
    });

    test('Exec, Attach, PortForward return absolute URLs with 8-char tokens', async () => {
      assert.match(await execUrl(['true']), URL_RE('exec'));
      const a = await st.cri.runtime.Attach({ container_id: sleeper, stdout: true, stderr: true });
      assert.match(a.url, URL_RE('attach'));
      assert.match(await pfUrl(), URL_RE('portforward'));
    });

    test('Exec/Attach validation errors are INVALID_ARGUMENT', async () => {
      const bad = [
        [() => st.cri.runtime.Exec({ container_id: sleeper, cmd: ['x'], tty: true, stdout: true, stderr: true }),
          'tty and stderr cannot both be true'],
        [() => st.cri.runtime.Exec({ container_id: sleeper, cmd: ['x'] }),
          'one of stdin, stdout, or stderr must be set'],
        [() => st.cri.runtime.Attach({ container_id: sleeper }),
          'one of stdin, stdout, and stderr must be set'],
      ];
      for (const [call, msg] of bad)
        await assert.rejects(call, (e) => e.code === grpcStatus.INVALID_ARGUMENT && e.details === msg);
    });
  });

  describe('streaming-server upgrade answers (raw HTTP)', () => {
    test('SPDY exec offering only v5 → 403 listing v4..v1', async () => {
      const r = await rawRequest(await execUrl(['true']), 'POST',
        [...SPDY_HEADERS, 'X-Stream-Protocol-Version: v5.channel.k8s.io']);
      assert.match(r, /^HTTP\/1\.1 403 /);
      const accepted = [...r.matchAll(/^X-Accepted-Stream-Protocol-Versions: (.*)\r$/gm)].map((m) => m[1]);
      assert.deepEqual(accepted, ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);
    });

    test('SPDY exec offering v5,v4 → 101 with v4 (exact head)', async () => {
      const r = await rawRequest(await execUrl(['true']), 'POST',
        [...SPDY_HEADERS, 'X-Stream-Protocol-Version: v5.channel.k8s.io', 'X-Stream-Protocol-Version: v4.channel.k8s.io']);
      assert.ok(r.startsWith('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n'), JSON.stringify(r));
    });

    test('SPDY port-forward without X-Stream-Protocol-Version → empty 200', async () => {
      const r = await rawRequest(await pfUrl(), 'POST', SPDY_HEADERS);
      assert.match(r, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(r, /\r\nContent-Length: 0\r\n/);
    });

    test('unknown token → 404 "404 page not found"', async () => {
      const u = new URL(await execUrl(['true']));
      const r = await rawRequest(`http://${u.host}/exec/AAAAAAAA`, 'POST',
        [...SPDY_HEADERS, 'X-Stream-Protocol-Version: v4.channel.k8s.io']);
      assert.match(r, /^HTTP\/1\.1 404 /);
      assert.ok(r.endsWith('\r\n\r\n404 page not found\n'), JSON.stringify(r));
    });

    test('WebSocket exec: v5.channel.k8s.io → bare 403; v4.channel.k8s.io → 101', async () => {
      const v5 = await rawRequest(await execUrl(['true']), 'GET',
        [...WS_HEADERS, 'Sec-WebSocket-Protocol: v5.channel.k8s.io']);
      assert.equal(v5, 'HTTP/1.1 403 Forbidden\r\n\r\n');
      const v4 = await rawRequest(await execUrl(['true']), 'GET',
        [...WS_HEADERS, 'Sec-WebSocket-Protocol: v4.channel.k8s.io']);
      assert.match(v4, /^HTTP\/1\.1 101 /);
      assert.match(v4, /\r\nSec-WebSocket-Protocol: v4\.channel\.k8s\.io\r\n/);
    });

    test('WebSocket port-forward: SPDY/3.1+portforward.k8s.io → bare 403', async () => {
      const r = await rawRequest(await pfUrl(), 'GET',
        [...WS_HEADERS, 'Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io']);
      assert.equal(r, 'HTTP/1.1 403 Forbidden\r\n\r\n');
    });
  });

  skippable('Go spdystream client against containerd', goSkipReason(), () => {
    before(() => run(GO_BUILD, [], { timeoutMs: BUILD_TIMEOUT_MS }), { timeout: BUILD_TIMEOUT_MS });

    test('exec echo, default offer (v5..v1) negotiates v4', async () => {
      const r = await runClient(['exec', '-v', await execUrl(['echo', 'hello'])]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'hello\n');
      assert.match(r.stderr, /protocol "v4\.channel\.k8s\.io"/);
    });

    test('exec echo offering only v2', async () => {
      const r = await runClient(['exec', '-v', '--protocols', 'v2.channel.k8s.io', await execUrl(['echo', 'two'])]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'two\n');
      assert.match(r.stderr, /protocol "v2\.channel\.k8s\.io"/);
    });

    test("v4: sh -c 'exit 3' → exit code 3 from the NonZeroExitCode Status", async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-st-'));
      const file = path.join(dir, 'status.json');
      const r = await runClient(['exec', '--status-file', file,
        await execUrl(['sh', '-c', 'echo out; echo err >&2; exit 3'])]);
      const status = JSON.parse(await readFile(file, 'utf8'));
      await rm(dir, { recursive: true, force: true });
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout, 'out\n');
      assert.match(r.stderr, /^err\n/m);
      assert.match(r.stderr, /command terminated with exit code 3/);
      assert.equal(status.reason, 'NonZeroExitCode');
      assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
    });

    test("v2: sh -c 'exit 3' → plain-text error, exit 1", async () => {
      const r = await runClient(['exec', '--protocols', 'v2.channel.k8s.io', await execUrl(['sh', '-c', 'exit 3'])]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /error executing remote command: command terminated with non-zero exit code: .*exit code 3/);
    });

    for (const proto of ['v4.channel.k8s.io', 'v2.channel.k8s.io']) {
      test(`${proto}: stdin through cat, FIN at EOF ends the command`, async () => {
        const input = 'line one\nline two\n';
        const r = await runClient(['exec', '-i', '--protocols', proto, await execUrl(['cat'], { stdin: true })], { input });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, input);
      });
    }

    test('tty + resize 100x30 is seen by stty size', async () => {
      const r = await runClient(['exec', '-t', '--resize', '100x30',
        await execUrl(['sh', '-c', 'sleep 0.5; stty size'], { tty: true })]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.replace(/\r/g, ''), '30 100\n');
    });

    test('attach with stdin to a stdin_once container', async () => {
      const catter = await startContainer('catter', ['cat'], { stdin: true, stdin_once: true });
      const { url } = await st.cri.runtime.Attach({ container_id: catter, stdin: true, stdout: true, stderr: true });
      const r = await runClient(['attach', '-i', url], { input: 'attached\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'attached\n');
    });

    test('upgrade refused: offering only v5 → exit 125 with the 403 text', async () => {
      const r = await runClient(['exec', '--protocols', 'v5.channel.k8s.io', await execUrl(['true'])]);
      assert.equal(r.code, 125);
      assert.match(r.stderr, /HTTP 403.*unable to negotiate protocol/);
    });

    test('pf: stdin/stdout through nc -e cat in the host-network pod', async () => {
      const r = await runClient(['pf', await pfUrl(), String(echoPort)], { input: 'ping-pong\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'ping-pong\n');
    });

    test('pf: 256 KiB round trip', async () => {
      const input = randomBytes(PF_BIG_BYTES);
      const r = await runClient(['pf', await pfUrl(), String(echoPort)], { input });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdoutBuf.equals(input), `got ${r.stdoutBuf.length} bytes`);
    });

    test('pf: closed port → error-stream text, exit 1', async () => {
      const closed = await freePort();
      const r = await runClient(['pf', await pfUrl(), String(closed)], { input: 'x' });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`an error occurred forwarding stdio -> ${closed}: ` +
        `error forwarding port ${closed} to pod ${pod}, uid : .*connection refused`));
    });

    test(`pf-listen: ${PF_CONNECTIONS} concurrent connections on one session`, async () => {
      const p = spawn(CLIENT, ['pf-listen', await pfUrl(), `0:${echoPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      p.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise((resolve) => p.on('close', (code) => resolve(code)));
      try {
        const local = await new Promise((resolve, reject) => {
          let out = '';
          p.stdout.on('data', (d) => {
            out += d;
            const m = out.match(/^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$/m);
            if (m) resolve(Number(m[1]));
          });
          p.on('close', () => reject(new Error(`pf-listen exited: ${stderr}`)));
        });
        const echo = (i) => new Promise((resolve, reject) => {
          const payload = `connection ${i} ${randomBytes(8).toString('hex')}\n`;
          const s = net.connect(local, '127.0.0.1', () => s.end(payload));
          const got = [];
          s.on('data', (d) => got.push(d));
          s.on('end', () => resolve([payload, Buffer.concat(got).toString()]));
          s.on('error', reject);
        });
        const results = await Promise.all([...Array(PF_CONNECTIONS).keys()].map(echo));
        for (const [sent, got] of results) assert.equal(got, sent);
      } finally {
        p.kill('SIGTERM');
      }
      assert.equal(await exited, 0, stderr);
    });
  });
});
