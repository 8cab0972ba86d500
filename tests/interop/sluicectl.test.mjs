// sluicectl, the crictl-style CLI: every command against a sluiced in temp
// dirs; exec/attach/port-forward on both transports (exit codes, stdin EOF,
// 64 MiB sha256-checked, a real terminal through tmux: raw mode, size and
// resize, detach keys, restoration); the same streaming against containerd
// 1.6 (the Go kubelet streaming server: SPDY, legacy WebSocket, the
// fallback when it refuses tunnelling); and bad input: flags, configs,
// endpoints that are absent, silent or not gRPC, refused protocols, used
// tokens, a server that cuts the session.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
// js-yaml (with @kubernetes/client-node): an independent reader of -o yaml.
import yaml from 'js-yaml';
import { connectCri } from './lib/cri.mjs';
import { PrivateContainerd, containerdSkipReason } from './lib/ctrd_private.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, busyboxImageTar, skipReason } from './lib/sluiced.mjs';
import {
  SLUICECTL, Tmux, ctl, ctlBackground, fakeCri, fakeSocket, fakeStreamServer, freePort, haveTmux,
  sha256, sleep, tcpRoundTrip, tmpDir,
} from './lib/sluicectl.mjs';

const MiB = 1024 * 1024;
// The limits `update` sets, as a container reads them (cgroup v1).
const CGROUP_READ = 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us ' +
  '/sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpuset/cpuset.cpus';
const UPDATE_FLAGS = ['--memory', '134217728', '--cpu-quota', '20000', '--cpu-period', '100000',
  '--cpu-share', '256', '--cpuset-cpus', '0', '--cpuset-mems', '0'];
const BIG = 64 * MiB;
const ECHO_CONNS = 8; // concurrent port-forward connections on one session
const noBinary = fs.existsSync(SLUICECTL) ? false : `no sluicectl at ${SLUICECTL} (build it)`;
const COMMANDS = ['version', 'info', 'runp', 'stopp', 'rmp', 'pods', 'inspectp', 'create', 'run',
  'start', 'stop', 'rm', 'ps', 'inspect', 'update', 'events', 'stats', 'statsp', 'logs', 'images',
  'inspecti', 'rmi', 'imagefsinfo', 'image', 'pull', 'exec', 'attach', 'port-forward', 'kubeconfig',
  'config', 'completion', 'runtime-config', 'update-runtime-config', 'metricsp', 'checkpoint'];

// What the same commands showed on sluiced, compared on containerd.
const onSluiced = {};

// The logs views both runtimes must show alike for a container "chat"
// whose attempt 0 wrote a0 (stdout) and e0 (stderr) and whose attempt 1
// wrote b1, then b2 over 6 s later (--since 4s leaves room for slow runs).
const B_GAP_MS = 6200;
async function logViews(run, name) {
  const v = {};
  for (const [k, args] of Object.entries({ since: ['--since', '4s'], limit: ['--limit-bytes', '4'],
    prev: ['-p'], tail: ['--tail', '1'], far: ['--since', '2099-01-01'] })) {
    const r = await run(['logs', ...args, name]);
    v[k] = [r.code, r.stdout, r.stderr];
  }
  return v;
}

// ---- without a runtime ---------------------------------------------------------

describe('sluicectl: flags, configs and endpoints', { skip: noBinary }, () => {
  let dir;
  before(() => { dir = tmpDir('flags'); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('--help, and --help of every command', async () => {
    const g = await ctl(['--help']);
    assert.equal(g.code, 0);
    for (const c of COMMANDS) assert.match(g.stdout, new RegExp(`\\n  ${c} `), c);
    for (const c of COMMANDS) {
      const r = await ctl([c, '--help']);
      assert.equal(r.code, 0, `${c} --help: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^Usage: sluicectl ${c}`), c);
    }
    assert.match((await ctl(['create', '--help'])).stdout, /configs are YAML\s+or JSON/);
  });

  test('unknown command, unknown flags, missing values: exit 2 naming them', async () => {
    let r = await ctl(['frobnicate']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown command "frobnicate"/);
    r = await ctl(['--bogus', 'version']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--bogus/);
    r = await ctl(['ps', '--bogus']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /sluicectl ps: unknown flag --bogus \(see sluicectl ps --help\)/);
    r = await ctl(['exec', '-Z', 'x', 'y']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown flag -Z/);
    r = await ctl(['ps', '-o']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /needs a value/);
    r = await ctl(['ps', '-o', 'xml']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown output format "xml"/);
    r = await ctl(['port-forward', 'pod', '99999']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /"99999" is not \[LOCAL:\]REMOTE/);
    r = await ctl(['attach', '--detach-keys', 'ctrl-1', 'x']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--detach-keys "ctrl-1"/);
    r = await ctl(['--timeout', 'soon', 'version']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /timeout "soon" is not a duration/);
  });

  test('malformed config files: the file, line and what is wrong', async () => {
    const cases = [
      ['runtime-endpoint unix:///x\n', /:1: expected "key: value"/],
      ['# ok\nruntime-endpont: unix:///x\n', /:2: unknown key "runtime-endpont"/],
      ['timeout: forever\n', /:1: timeout "forever" is not a duration/],
      ['debug: maybe\n', /:1: debug must be true or false/],
      ['runtime-endpoint: "unix:///x\n', /:1: unterminated quote/],
    ];
    for (const [text, re] of cases) {
      const f = path.join(dir, 'bad.yaml');
      fs.writeFileSync(f, text);
      const r = await ctl(['-c', f, 'version']);
      assert.equal(r.code, 2, text);
      assert.match(r.stderr, re, text);
      assert.ok(r.stderr.includes(f), r.stderr);
    }
    const r = await ctl(['-c', path.join(dir, 'missing.yaml'), 'version']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /missing\.yaml: No such file/);
  });

  test('config --set/--get/--list and KEY VALUE, as crictl config: lines edited in place, comments kept', async () => {
    const f = path.join(dir, 'sub', 'edit.yaml');
    let r = await ctl(['-c', f, 'config', '--list']); // a missing file: the defaults
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^KEY +VALUE\nruntime-endpoint +\nimage-endpoint +\ntimeout +2s\ndebug +false\n/);
    assert.match(r.stdout, /\npull-image-on-create +false\ndisable-pull-on-run +false\n$/);
    assert.ok(!fs.existsSync(f), 'reading does not create the file');
    r = await ctl(['-c', f, 'config', '--set', 'runtime-endpoint=unix:///a.sock,debug=true',
      '--set', 'timeout=5s']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(fs.readFileSync(f, 'utf8'), 'runtime-endpoint: unix:///a.sock\ntimeout: 5s\ndebug: true\n');
    fs.writeFileSync(f, '# mine\nimage-endpoint: "unix:///b c.sock" # keep me\ndebug: true\n');
    r = await ctl(['-c', f, 'config', 'image-endpoint', 'unix:///d,e.sock']); // VALUE may hold commas
    assert.equal(r.code, 0, r.stderr);
    r = await ctl(['-c', f, 'config', '--set', 'debug=false']);
    assert.equal(fs.readFileSync(f, 'utf8'), '# mine\nimage-endpoint: unix:///d,e.sock # keep me\ndebug: false\n');
    r = await ctl(['-c', f, 'config', '--set', 'image-endpoint=unix:///has #hash']); // quoted to read back
    assert.match(fs.readFileSync(f, 'utf8'), /^image-endpoint: "unix:\/\/\/has #hash" # keep me$/m);
    assert.equal((await ctl(['-c', f, 'config', '--get', 'image-endpoint'])).stdout, 'unix:///has #hash\n');
    r = await ctl(['-c', f, 'config', 'image-endpoint', 'unix:///d,e.sock']);
    assert.equal((await ctl(['-c', f, 'config', '--get', 'image-endpoint'])).stdout, 'unix:///d,e.sock\n');
    assert.equal((await ctl(['-c', f, 'config', '--get', 'timeout'])).stdout, '2s\n');
    for (const [args, re] of [[['--set', 'timeout=soon'], /--set: timeout "soon" is not a duration/],
      [['--set', 'debug'], /--set needs KEY=VALUE/], [['--get', 'nokey'], /no config key named "nokey"/],
      [['--get', 'debug', '--list'], /give one of --get, --set, --list or KEY VALUE/]]) {
      r = await ctl(['-c', f, 'config', ...args]);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, re);
    }
    r = await ctl(['-c', f, 'version']); // and sluicectl reads what config wrote
    assert.match(r.stderr, /unix:\/\/\/d,e\.sock|runtime not reachable/);
  });

  test('completion bash: commands, then the command\'s own flags (from its --help), in bash itself', async () => {
    let r = await ctl(['completion', 'bash']);
    assert.equal(r.code, 0, r.stderr);
    const script = path.join(dir, 'completion.bash');
    fs.writeFileSync(script, r.stdout);
    const complete = (...words) => {
      const b = spawnSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); ` +
        `COMP_CWORD=${words.length - 1}; _sluicectl; echo "\${COMPREPLY[*]}"`],
      { encoding: 'utf8', env: { ...process.env, PATH: `${path.dirname(SLUICECTL)}:${process.env.PATH}` } });
      assert.equal(b.status, 0, b.stderr);
      return b.stdout.trim().split(' ');
    };
    assert.deepEqual(complete('sluicectl', 'stat').sort(), ['stats', 'statsp']);
    assert.deepEqual(complete('sluicectl', '-r', 'unix:///x', 'ev').sort(), ['event', 'events']);
    assert.deepEqual(complete('sluicectl', '--run'), ['--runtime-endpoint']);
    assert.deepEqual(complete('sluicectl', 'logs', '--').sort(),
      ['--follow', '--help', '--limit-bytes', '--previous', '--reopen', '--since', '--tail', '--timestamps']);
    assert.deepEqual(complete('sluicectl', 'update', '--cpu-').sort(), ['--cpu-period', '--cpu-quota', '--cpu-share']);
    r = await ctl(['completion', 'zsh']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /only bash completion/);
  });

  test('YAML configs are read before any call: syntax and field errors name the line', async () => {
    const y = path.join(dir, 'bad-pod.yaml');
    const cases = [
      ['metadata:\n  name: x\n  nmespace: y\n', /bad-pod\.yaml:3:3: metadata\.nmespace: unknown field \(not in PodSandboxMetadata\)/],
      ['metadata: [1\n', /bad-pod\.yaml:2:1: did not find expected ',' or ']'/],
      ['linux: {security_context: {privileged: maybe}}\n', /linux\.security_context\.privileged: expected true or false/],
      ['metadata: {name: x}\n---\nhostname: y\n', /holds more than one YAML document/],
      ['labels: &a {k: *a}\n', /nested too deeply/],
    ];
    for (const [text, re] of cases) {
      fs.writeFileSync(y, text);
      const r = await ctl(['-r', 'unix:///nowhere.sock', 'runp', y]);
      assert.equal(r.code, 1, text);
      assert.match(r.stderr, re, text);
      assert.doesNotMatch(r.stderr, /not reachable/, 'the file is read before connecting');
    }
  });

  test('precedence: flag > CONTAINER_RUNTIME_ENDPOINT > config file; the hint names them', async () => {
    const f = path.join(dir, 'ctl.yaml');
    fs.writeFileSync(f, '# sluicectl\nruntime-endpoint: "unix:///cfg/none.sock"\ntimeout: 1\ndebug: false\n');
    let r = await ctl(['-c', f, 'version']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /runtime not reachable: unix:\/\/\/cfg\/none\.sock: .*No such file/);
    assert.match(r.stderr, /Is sluiced .* running\? .*-r\/--runtime-endpoint, \$CONTAINER_RUNTIME_ENDPOINT/);
    r = await ctl(['-c', f, 'version'], { env: { CONTAINER_RUNTIME_ENDPOINT: 'unix:///env/none.sock' } });
    assert.match(r.stderr, /unix:\/\/\/env\/none\.sock/);
    r = await ctl(['-c', f, '-r', 'unix:///flag/none.sock', 'version'],
      { env: { CONTAINER_RUNTIME_ENDPOINT: 'unix:///env/none.sock' } });
    assert.match(r.stderr, /unix:\/\/\/flag\/none\.sock/);
    r = await ctl(['-r', 'tcp://127.0.0.1:1', 'version']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /only unix sockets are supported/);
    r = await ctl(['-D', '-r', 'unix:///flag/none.sock', 'version']);
    assert.match(r.stderr, /debug: connecting to unix:\/\/\/flag\/none\.sock/);
  });

  test('endpoints that are not gRPC, close at once, or never answer: said so, never a bare EOF', async () => {
    const s1 = path.join(dir, 'close.sock');
    const s2 = path.join(dir, 'silent.sock');
    const s3 = path.join(dir, 'http1.sock');
    const a = await fakeSocket(s1, 'close');
    const b = await fakeSocket(s2, 'silent');
    const c = await fakeSocket(s3, 'http1');
    try {
      let r = await ctl(['-r', `unix://${s1}`, 'version']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /closed the connection/);
      assert.doesNotMatch(r.stderr, /\bEOF\b/);
      const t0 = Date.now();
      r = await ctl(['-r', `unix://${s2}`, '--timeout', '700ms', 'version']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /no answer within 700 ms .*raise --timeout/);
      assert.ok(Date.now() - t0 < 5000, 'the timeout was honoured');
      r = await ctl(['-r', `unix://${s3}`, 'ps']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /sluicectl ps: /);
      assert.doesNotMatch(r.stderr, /\bEOF\b/);
    } finally {
      await a.close();
      await b.close();
      await c.close();
    }
  });
});

// ---- against sluiced --------------------------------------------------------------

const sdSkip = noBinary || skipReason();

describe('sluicectl against sluiced', { skip: sdSkip }, () => {
  let sd;
  let dir;
  let run; // (args, opts) with -r
  let podFile;
  let pod;
  let sleeper; // running sleep, host pod
  let echoPorts; // ECHO_CONNS nc's, each echoing what one connection sends
  let sinkPort; // each connection: sha256sum of what it receives
  let srcPort; // each connection: 64 MiB of random bytes (their hash in /tmp/big.sha)
  let src;
  let sock;

  const ctrFile = (name, cfg) => {
    const f = path.join(dir, `${name}.json`);
    fs.writeFileSync(f, JSON.stringify({ metadata: { name }, image: { image: BUSYBOX_IMAGE },
      log_path: `${name}.log`, ...cfg }));
    return f;
  };
  const mk = async (name, cfg) => {
    const r = await run(['create', pod, ctrFile(name, cfg), podFile]);
    assert.equal(r.code, 0, r.stderr);
    const id = r.stdout.trim();
    const s = await run(['start', id]);
    assert.equal(s.code, 0, s.stderr);
    return id;
  };

  before(async () => {
    sd = await SluicedInstance.start({ label: 'ctl' });
    dir = tmpDir('sd');
    run = (args, opts) => ctl(['-r', sd.endpoint, ...args], opts);
    podFile = path.join(dir, 'pod.json');
    // crictl-style file: snake_case proto names and lowerCamelCase both work.
    fs.writeFileSync(podFile, JSON.stringify({
      metadata: { name: 'ctl-pod', uid: 'ctl-uid-1', namespace: 'ctl-ns', attempt: 1 },
      logDirectory: path.join(dir, 'logs'), labels: { app: 'ctl' },
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER' } } },
    }));
    const r = await run(['runp', podFile], { timeoutMs: 120000 });
    assert.equal(r.code, 0, `${r.stderr}\n${sd.describe()}`);
    pod = r.stdout.trim();
    sd.podIds.add(pod);
    sleeper = await mk('sleeper', { command: ['sleep', '3600'] });
    // One busybox nc per concurrent connection: nc listens with a backlog of 1, so a burst of 8
    // connects to one nc under load has the kernel reset some (seen with node connecting
    // straight to nc on the host, no runtime in between).
    echoPorts = [];
    for (let i = 0; i < ECHO_CONNS; i++) echoPorts.push(await freePort());
    await mk('echo', { command: ['sh', '-c',
      `${echoPorts.map((p) => `nc -ll -p ${p} -e cat &`).join(' ')} wait`] });
    sinkPort = await freePort();
    await mk('sink', { command: ['nc', '-ll', '-p', String(sinkPort), '-e', 'sha256sum'] });
    srcPort = await freePort();
    src = await mk('src', { command: ['sh', '-c', 'head -c 67108864 /dev/urandom >/tmp/big && ' +
      `sha256sum /tmp/big >/tmp/big.sha && exec nc -ll -p ${srcPort} -e cat /tmp/big`] });
  });
  after(async () => {
    await sd?.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('version, info (json, yaml)', async () => {
    let r = await run(['version']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Version: +\S+\nRuntimeName: +sluice\nRuntimeVersion: +\S+\nRuntimeApiVersion: +v1\n$/);
    r = await run(['version', '-o', 'json']);
    assert.equal(JSON.parse(r.stdout).runtimeName, 'sluice');
    r = await run(['info']);
    const info = JSON.parse(r.stdout);
    assert.ok(info.status.conditions.find((c) => c.type === 'RuntimeReady' && c.status === true));
    r = await run(['info', '-o', 'yaml']);
    assert.match(r.stdout, /^status:\n  conditions:\n  - type: RuntimeReady\n    status: true\n/m);
  });

  test('pods: table, filters, -q, json, yaml; inspectp', async () => {
    let r = await run(['pods']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0], /^POD ID +CREATED +STATE +NAME +NAMESPACE +ATTEMPT +RUNTIME$/);
    assert.match(lines[1], new RegExp(`^${pod.slice(0, 13)} +.* ago +Ready +ctl-pod +ctl-ns +1 +\\(default\\)$`));
    assert.equal((await run(['pods', '-q'])).stdout, `${pod}\n`);
    assert.equal((await run(['pods', '-q', '--name', '^ctl-p', '--label', 'app=ctl', '-s', 'ready'])).stdout, `${pod}\n`);
    assert.equal((await run(['pods', '-q', '--label', 'app=other'])).stdout, '');
    assert.equal((await run(['pods', '-q', '--namespace', 'nope'])).stdout, '');
    r = await run(['pods', '-o', 'json']);
    assert.equal(JSON.parse(r.stdout).items[0].metadata.uid, 'ctl-uid-1');
    r = await run(['pods', '-o', 'yaml']);
    assert.match(r.stdout, /^items:\n- id: [0-9a-f]{64}\n  metadata:\n    name: ctl-pod\n/);
    r = await run(['inspectp', pod.slice(0, 10)]); // a unique prefix is enough
    assert.equal(r.code, 0, r.stderr);
    const st = JSON.parse(r.stdout);
    assert.equal(st.status.id, pod);
    assert.equal(st.status.state, 'SANDBOX_READY');
    assert.equal(st.status.labels.app, 'ctl');
    r = await run(['inspectp', '-o', 'table', 'ctl-pod']); // or its name
    assert.match(r.stdout, /^ID: [0-9a-f]{64}\nName: ctl-pod\nUID: ctl-uid-1\nNamespace: ctl-ns\n/);
    r = await run(['inspectp', 'nosuchpod']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pod sandbox "nosuchpod" not found: .*`sluicectl pods` lists them/);
  });

  test('ps, inspect, logs (--tail, -t, -f until the container exits), stop, rm', async () => {
    const talker = await mk('talker', { command: ['sh', '-c', 'echo one; echo two >&2; echo three; sleep 1.5; echo four'] });
    let r = await run(['ps']);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0], /^CONTAINER +IMAGE +CREATED +STATE +NAME +ATTEMPT +POD ID +POD +NAMESPACE$/);
    assert.ok(lines.some((l) => new RegExp(`^${sleeper.slice(0, 13)} +${BUSYBOX_IMAGE} +.* Running +sleeper +0 +${pod.slice(0, 13)} +ctl-pod +ctl-ns$`).test(l)), r.stdout);
    assert.equal((await run(['ps', '-q', '--name', '^sleeper$'])).stdout, `${sleeper}\n`);
    assert.equal((await run(['ps', '-q', '--id', sleeper.slice(0, 8), '-p', pod])).stdout, `${sleeper}\n`);
    r = await run(['ps', '-o', 'json', '--name', 'sleeper']);
    assert.equal(JSON.parse(r.stdout).containers[0].id, sleeper);
    r = await run(['inspect', 'sleeper']);
    assert.equal(JSON.parse(r.stdout).status.state, 'CONTAINER_RUNNING');
    r = await run(['logs', '-f', talker], { timeoutMs: 20000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'one\nthree\nfour\n');
    assert.equal(r.stderr, 'two\n');
    r = await run(['logs', '--tail', '1', talker]);
    assert.equal(r.stdout, 'four\n');
    r = await run(['logs', '-t', '--tail', '1', talker]);
    assert.match(r.stdout, /^\d{4}-\d\d-\d\dT\S+Z four\n$/);
    assert.equal(r.stderr, '');
    r = await run(['logs', '--tail', '2', talker]); // "two" may come before or after "three"
    assert.match(r.stdout, /^(three\n)?four\n$/);
    assert.doesNotMatch(r.stdout, /one/);
    r = await run(['ps', '-a', '-q', '--state', 'exited']);
    assert.ok(r.stdout.includes(talker));
    r = await run(['inspect', '-o', 'table', talker]);
    assert.match(r.stdout, /State: Exited\n/);
    assert.match(r.stdout, /Exit Code: 0\n/);
    const victim = await mk('victim', { command: ['sleep', '3600'] });
    r = await run(['stop', '-t', '1', victim]);
    assert.equal(r.stdout, `${victim}\n`);
    r = await run(['rm', victim, talker]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await run(['ps', '-a', '-q', '--name', 'victim|talker'])).stdout, '');
    r = await run(['inspect', '']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /an empty container ID names nothing/);
    r = await run(['rm', 'no-such-ctr']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /container "no-such-ctr" not found: .*`sluicectl ps -a`/);
  });

  test('images, inspecti, rmi, image import (copied into the import dir, then PullImage)', async () => {
    let r = await run(['images']);
    assert.match(r.stdout, /^IMAGE +TAG +IMAGE ID +SIZE\n/);
    const pinned = await run(['images', '--pinned', '--digests']);
    assert.match(pinned.stdout, /^IMAGE +TAG +DIGEST +IMAGE ID +SIZE +PINNED\n/);
    assert.match(pinned.stdout, /^localhost\/sluice\/busybox +latest +[0-9a-f]{13} +[0-9a-f]{13} +[\d.]+MB +false$/m);
    assert.match(r.stdout, /\nlocalhost\/sluice\/busybox +latest +[0-9a-f]{13} +[\d.]+MB\n/);
    r = await run(['images', '-o', 'json', BUSYBOX_IMAGE]);
    const img = JSON.parse(r.stdout).images[0];
    assert.ok(img.repoTags.includes(BUSYBOX_IMAGE));
    r = await run(['inspecti', BUSYBOX_IMAGE]);
    assert.equal(JSON.parse(r.stdout).status.id, img.id);
    r = await run(['inspecti', 'localhost/nope:1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /image "localhost\/nope:1" not found/);
    r = await run(['rmi', 'localhost/sluice/pause:latest']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Deleted: localhost\/sluice\/pause:latest/);
    assert.doesNotMatch((await run(['images'])).stdout, /sluice\/pause/);
    r = await run(['image', 'import', '--import-dir', path.join(dir, 'no-dir'), busyboxImageTar()]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /import directory .*no-dir: No such file or directory\. Is sluiced running with --import-dir/);
    r = await run(['image', 'import', podFile]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not a readable tarball|neither an OCI image layout/);
    r = await run(['--import-dir', sd.importDir, 'image', 'import', busyboxImageTar()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Imported localhost\/sluice\/pause:latest: sha256:[0-9a-f]{64}\n/);
    assert.match((await run(['images'])).stdout, /sluice\/pause/);
    assert.ok(fs.existsSync(path.join(sd.importDir, 'busybox-oci.tar')));
  });

  test('configs: JSON and YAML errors with line and column, unknown fields by path', async () => {
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"metadata": {"name": "x",}\n');
    let r = await run(['runp', bad]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /bad\.json:1:\d+: .*\(a file starting with '\{' is read as JSON\)/);
    const y = path.join(dir, 'pod.yaml');
    fs.writeFileSync(y, 'metadata:\n  name: x\n  nmespace: y\n');
    r = await run(['runp', y]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pod\.yaml:3:3: metadata\.nmespace: unknown field \(not in PodSandboxMetadata\)/);
    fs.writeFileSync(bad, JSON.stringify({ metadata: { name: 'x', nmespace: 'y' } }));
    r = await run(['runp', bad]);
    assert.match(r.stderr, /PodSandboxConfig: metadata\.nmespace: unknown field \(not in PodSandboxMetadata\)/);
    fs.writeFileSync(bad, JSON.stringify({ linux: { security_context: { namespace_options: { network: 'MOON' } } } }));
    r = await run(['runp', bad]);
    assert.match(r.stderr, /network: unknown value MOON/);
  });

  test('exec: exit codes, stdout/stderr apart, stdin EOF, -s, unknown container (SPDY and WebSocket)', async () => {
    for (const t of ['spdy', 'websocket']) {
      let r = await run(['exec', '-r', t, sleeper, 'sh', '-c', 'echo out; echo err >&2; exit 3']);
      assert.equal(r.code, 3, `${t}: ${r.stderr}`);
      assert.equal(r.stdout, 'out\n');
      assert.equal(r.stderr, 'err\n');
      r = await run(['exec', '-i', '-r', t, 'sleeper', 'sh', '-c', 'cat; echo done-$?'], { input: 'a\nb\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'a\nb\ndone-0\n');
      r = await run(['exec', '-r', t, sleeper, 'sh', '-c', 'exit 0']);
      assert.equal(r.code, 0);
    }
    let r = await run(['exec', '-s', sleeper, 'sh', '-c', 'echo so; echo se >&2; exit 4']);
    assert.equal(r.code, 4);
    assert.equal(r.stdout, 'so\n');
    assert.equal(r.stderr, 'se\n');
    r = await run(['exec', '-s', '--timeout', '1', sleeper, 'sleep', '10'], { timeoutMs: 20000 });
    assert.notEqual(r.code, 0);
    r = await run(['exec', 'no-such', 'true']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /container "no-such" not found/);
    r = await run(['exec', sleeper, 'no-such-binary']);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.length > 0, 'says why');
  });

  test('exec: 64 MiB each way, sha256-checked (SPDY and WebSocket)', async () => {
    const data = crypto.randomBytes(BIG);
    const want = sha256(data);
    for (const t of ['spdy', 'websocket']) {
      let r = await run(['exec', '-i', '-r', t, sleeper, 'sha256sum'], { input: data, timeoutMs: 120000 });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.split(' ')[0], want, `${t} upload`);
      r = await run(['exec', '-r', t, sleeper, 'sh', '-c',
        'head -c 67108864 /dev/urandom >/tmp/big && sha256sum /tmp/big >&2 && cat /tmp/big && rm /tmp/big'],
      { raw: true, timeoutMs: 120000 });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.length, BIG, `${t} download size`);
      assert.equal(sha256(r.stdout), r.stderr.split(' ')[0], `${t} download`);
    }
  });

  test('port-forward: concurrent connections, one failing does not end the others, 64 MiB (SPDY, WebSocket tunnel, legacy)', async () => {
    const big = crypto.randomBytes(BIG);
    let want = '';
    for (let i = 0; i < 100 && !want; i++) {
      want = (await run(['exec', src, 'cat', '/tmp/big.sha'])).stdout.split(' ')[0];
      if (!want) await sleep(100);
    }
    assert.match(want, /^[0-9a-f]{64}$/);
    for (const t of ['spdy', 'websocket', 'legacy']) {
      const ls = [];
      for (let i = 0; i < ECHO_CONNS; i++) ls.push(await freePort());
      const [l2, l3] = [await freePort(), await freePort()];
      const pf = await ctlBackground(['-r', sd.endpoint, 'port-forward', '-r', t, '--address', '127.0.0.1',
        pod, ...ls.map((l, i) => `${l}:${echoPorts[i]}`), `${l2}:1`,
        `${l3}:${t === 'legacy' ? srcPort : sinkPort}`],
      { ready: new RegExp(`-> ${t === 'legacy' ? srcPort : sinkPort}\\n`) });
      try {
        assert.match(pf.out(), new RegExp(`Forwarding from 127\\.0\\.0\\.1:${ls[0]} -> ${echoPorts[0]}\\n`));
        const bad = await tcpRoundTrip(l2, Buffer.from('x'), { timeoutMs: 10000 });
        assert.equal(bad.data.length, 0, `${t}: nothing comes back from a closed port`);
        // ECHO_CONNS connections at once, each a stream of the same session
        const many = await Promise.all(ls.map((l, i) => tcpRoundTrip(l, Buffer.from(`hello ${t} ${i}\n`))));
        many.forEach((m, i) => assert.equal(m.data.toString(), `hello ${t} ${i}\n`, `${t} conn ${i}`));
        if (t === 'legacy') { // no half-close on this protocol: a download
          const r = await tcpRoundTrip(l3, Buffer.alloc(0), { expect: BIG, timeoutMs: 120000 });
          assert.equal(r.data.length, BIG, `${t}: ${r.error}`);
          assert.equal(sha256(r.data), want, t);
        } else { // an upload; our FIN ends sha256sum's input
          const r = await tcpRoundTrip(l3, big, { expect: Infinity, timeoutMs: 120000 });
          assert.equal(r.data.toString().split(' ')[0], sha256(big), `${t}: ${r.error}`);
        }
        await sleep(200);
        assert.match(pf.err(), /connection .*-> 1\) failed: .*other connections go on/, t);
      } finally {
        const ex = await pf.stop('SIGINT');
        assert.equal(ex.code, 0, `${t}: ${pf.err()}`);
      }
    }
  });

  test('attach: stdin to a stdin_once container, EOF ends it (SPDY and WebSocket)', async () => {
    for (const t of ['spdy', 'websocket']) {
      const id = await mk(`reader-${t}`, { command: ['sh', '-c', 'read x; echo got-$x; cat >/dev/null; echo bye'], stdin: true, stdin_once: true });
      await sleep(300);
      const r = await run(['attach', '-i', '-r', t, id], { input: 'hello\nrest\n', timeoutMs: 20000 });
      assert.equal(r.code, 0, `${t}: ${r.stderr}`);
      assert.match(r.stdout, /got-hello\n(bye\n)?/);
    }
  });

  describe('in a real terminal (tmux)', { skip: haveTmux() ? false : 'tmux is not installed' }, () => {
    let tty;
    const wrap = (name, args) => {
      const f = path.join(dir, `${name}.sh`);
      fs.writeFileSync(f, `stty -g > ${dir}/${name}.before\n` +
        `sh -c 'echo $$ > ${dir}/${name}.pid; exec "$@"' sh ${SLUICECTL} -r ${sd.endpoint} ${args}\n` +
        // The settings are saved before EXIT= shows, which the tests wait for.
        `rc=$?\nstty -g > ${dir}/${name}.after\necho EXIT=$rc\nsleep 600\n`);
      return `sh ${f}`;
    };
    const restored = (name) => fs.readFileSync(`${dir}/${name}.before`, 'utf8') ===
      fs.readFileSync(`${dir}/${name}.after`, 'utf8');
    before(async () => {
      tty = await mk('tty', { command: ['sh'], tty: true, stdin: true });
    });

    for (const t of ['spdy', 'websocket']) {
      test(`exec -it over ${t}: raw mode (^C reaches the remote), size, resize, exit code, restored`, async () => {
        const tm = new Tmux(`exec-${t}`);
        try {
          tm.start(wrap(`exec-${t}`, `exec -it -r ${t} ${sleeper} sh`), { width: 100, height: 30 });
          await tm.waitScreen(/# ?$/m);
          tm.keys('stty -a | head -1', 'Enter');
          await tm.waitScreen(/rows 30; columns 100;/);
          tm.keys('sleep 30', 'Enter');
          await sleep(300);
          tm.keys('C-c');
          tm.keys('echo alive-$((20+22))', 'Enter');
          await tm.waitScreen(/^alive-42$/m);
          tm.resize(120, 40);
          await sleep(300);
          tm.keys('stty size', 'Enter');
          await tm.waitScreen(/^40 120$/m);
          tm.keys('exit 7', 'Enter');
          await tm.waitScreen(/^EXIT=7$/m);
          assert.ok(restored(`exec-${t}`), 'terminal settings restored');
        } finally {
          tm.kill();
        }
      });
    }

    test('attach -it: detach keys (default ctrl-p ctrl-q, and --detach-keys), container left running', async () => {
      for (const [name, keys, flag] of [['att1', ['C-p', 'C-q'], ''], ['att2', ['C-x'], '--detach-keys ctrl-x']]) {
        const tm = new Tmux(name);
        try {
          tm.start(wrap(name, `attach -i -t ${flag} ${tty}`));
          await sleep(500);
          tm.keys(`echo attached-${name}`, 'Enter');
          await tm.waitScreen(new RegExp(`^attached-${name}$`, 'm'));
          // ^P alone is passed on (the shell recalls the last command).
          tm.keys('C-p', 'Enter');
          await tm.waitScreen(new RegExp(`^attached-${name}$[^]*^attached-${name}$`, 'm'));
          tm.keys(...keys);
          await tm.waitScreen(/read escape sequence\s+EXIT=0/);
          assert.ok(restored(name), 'terminal settings restored');
        } finally {
          tm.kill();
        }
      }
      const r = await run(['inspect', tty]);
      assert.equal(JSON.parse(r.stdout).status.state, 'CONTAINER_RUNNING');
    });

    test('exec -it gets TERM=xterm (as containerd gives it); so does a tty container\'s own process', async () => {
      const tm = new Tmux('term');
      try {
        tm.start(wrap('term', `exec -it ${sleeper} sh`));
        await tm.waitScreen(/# ?$/m);
        tm.keys('echo term=$TERM', 'Enter');
        await tm.waitScreen(/^term=xterm$/m);
        tm.keys('exit', 'Enter');
        await tm.waitScreen(/^EXIT=0$/m);
      } finally {
        tm.kill();
      }
      const r = await run(['exec', tty, 'sh', '-c', 'tr "\\0" "\\n" < /proc/1/environ']);
      assert.match(r.stdout, /^TERM=xterm$/m);
    });

    test('SIGTERM during exec -it: the terminal is restored', async () => {
      const tm = new Tmux('sig');
      try {
        tm.start(wrap('sig', `exec -it ${sleeper} sh`));
        await tm.waitScreen(/# ?$/m);
        process.kill(Number(fs.readFileSync(`${dir}/sig.pid`, 'utf8')), 'SIGTERM');
        await tm.waitScreen(/^EXIT=143$/m);
        assert.ok(restored('sig'), 'terminal settings restored');
      } finally {
        tm.kill();
      }
    });
  });

  describe('failures on the streaming leg (a fake CRI in front)', () => {
    let fake;
    let fcri;
    let plan; // per call: a function req → url
    before(async () => {
      sock = path.join(dir, 'fake.sock');
      fcri = await fakeCri(sock, {
        Exec: (req) => plan.shift()(req),
        Attach: (req) => plan.shift()(req),
        PortForward: (req) => plan.shift()(req),
      });
    });
    after(async () => {
      await fcri?.close();
      await fake?.close();
    });
    const real = (req) => sd.execUrl(sleeper, req.cmd, { tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr });

    test('WebSocket refused with 403: a new Exec, then SPDY (said under -D)', async () => {
      fake = await fakeStreamServer(['ws403']);
      plan = [() => fake.url('exec'), real];
      const r = await ctl(['-D', '-r', fcri.endpoint, 'exec', '-r', 'websocket', 'fake-ctr', 'sh', '-c', 'exit 9']);
      assert.equal(r.code, 9, r.stderr);
      assert.match(r.stderr, /WebSocket refused \(upgrade refused: 403.*\); falling back to SPDY with a new URL/);
      assert.match(fake.requests[0], /Sec-WebSocket-Protocol: v5\.channel\.k8s\.io, v4\.channel\.k8s\.io/i);
      await fake.close();
      fake = null;
    });

    test('SPDY refused with the server\'s protocol list; an expired token; a session cut mid-way', async () => {
      fake = await fakeStreamServer(['spdy403', 'cut']);
      plan = [() => fake.url('exec')];
      let r = await ctl(['-r', fcri.endpoint, 'exec', 'fake-ctr', 'true']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /refused the session: .*403.*server accepts \[v9\.channel\.example, v8\.channel\.example\]/);
      plan = [() => `${sd.streamBase}exec/AAAAAAAAAAAAAAAAAAAAAA`];
      r = await ctl(['-r', fcri.endpoint, 'exec', 'fake-ctr', 'true']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /token\s+expired or was used already; run the command again/);
      plan = [() => fake.url('exec')];
      r = await ctl(['-r', fcri.endpoint, 'exec', '-i', 'fake-ctr', 'cat'], { keepStdin: true, timeoutMs: 20000 });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /lost the connection to the streaming server/);
      assert.doesNotMatch(r.stderr, /^EOF$/m);
      await fake.close();
      fake = null;
    });

    test('a session cut mid-way with -it in a real terminal: message, exit 1, terminal restored', { skip: haveTmux() ? false : 'no tmux' }, async () => {
      fake = await fakeStreamServer(['cut'], { cutMs: 1000 });
      plan = [() => fake.url('exec')];
      const tm = new Tmux('cut');
      try {
        const f = path.join(dir, 'cut.sh');
        fs.writeFileSync(f, `stty -g > ${dir}/cut.before\n${SLUICECTL} -r ${fcri.endpoint} exec -it fake-ctr sh\n` +
          `echo EXIT=$?\nstty -g > ${dir}/cut.after\nsleep 600\n`);
        tm.start(`sh ${f}`);
        const s = await tm.waitScreen(/^EXIT=1$/m);
        assert.match(s, /lost the connection to the streaming server/);
        assert.equal(fs.readFileSync(`${dir}/cut.before`, 'utf8'), fs.readFileSync(`${dir}/cut.after`, 'utf8'));
      } finally {
        tm.kill();
        await fake.close();
        fake = null;
      }
    });
  });

  // ---- crictl parity (issue 14) ----

  const inside = async (id, cmd) => {
    const r = await run(['exec', id, 'sh', '-c', cmd]);
    assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
    return r.stdout;
  };
  const waitLog = async (file, re, ms = 15000) => {
    const end = Date.now() + ms;
    while (!re.test(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')) {
      if (Date.now() > end) throw new Error(`${file} never matched ${re}`);
      await sleep(100);
    }
    return fs.readFileSync(file, 'utf8');
  };

  test('run and create from crictl-style YAML; pull; pulling on create/run as crictl decides', async () => {
    const y = (name, text) => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, text);
      return f;
    };
    // Plain scalars typed by their fields: uid 4711 and tier 1 are strings, yes a bool.
    const podY = y('run-pod.yaml', `metadata:\n  name: yaml-pod\n  uid: 4711\n  namespace: ctl-ns\n` +
      `log_directory: ${path.join(dir, 'logs-yaml')}\nlabels: {tier: 1}\n` +
      `linux:\n  security_context:\n    namespace_options: {network: NODE, pid: 1}\n`);
    const ctrY = y('run-ctr.yaml', `metadata: {name: yaml-ctr}\nimage: {image: '${BUSYBOX_IMAGE}'}\n` +
      `command: [sleep, 3600]\nenvs:\n  - {key: ANSWER, value: 42}\nlog_path: yaml-ctr.log\n` +
      `linux:\n  security_context: {readonly_rootfs: yes}\n`);
    let r = await run(['run', ctrY, podY], { timeoutMs: 120000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^[0-9a-f]{64}\n$/, 'crictl run prints the container ID only');
    const id = r.stdout.trim();
    const yamlPod = JSON.parse((await run(['inspect', id])).stdout).status;
    assert.equal(await inside(id, 'echo $ANSWER'), '42\n');
    assert.match(await inside(id, 'touch /x 2>&1 || echo ro'), /Read-only file system[^]*ro\n$/);
    r = await run(['pods', '-q', '--label', 'tier=1', '--name', '^yaml-pod$']);
    const yamlPodId = r.stdout.trim();
    assert.match(yamlPodId, /^[0-9a-f]{64}$/);
    assert.equal(JSON.parse((await run(['inspectp', yamlPodId])).stdout).status.metadata.uid, '4711');
    assert.equal(yamlPod.metadata.name, 'yaml-ctr');
    // pull: sluiced imports from its import directory
    const imgId = (await run(['images', '-q', BUSYBOX_IMAGE])).stdout.trim();
    r = await run(['pull', BUSYBOX_IMAGE]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Image is up to date for ${imgId}\n`);
    r = await run(['pull', '--creds', 'u:p', '-a', 'k=v', 'localhost/nope:1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /PullImage: image "localhost\/nope:1" is not in the local store/);
    // run pulls a missing image by default and leaves the pod when it cannot
    const missing = y('missing-ctr.yaml', 'metadata: {name: m}\nimage: {image: localhost/nope:2}\n');
    const pod2 = y('run-pod2.yaml', `metadata: {name: left-pod, uid: lp, namespace: ctl-ns}\n` +
      'linux: {security_context: {namespace_options: {network: NODE}}}\n');
    r = await run(['run', missing, pod2], { timeoutMs: 120000 });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /PullImage: image "localhost\/nope:2"[^]*pod sandbox ([0-9a-f]{64}) was left behind \(sluicectl rmp -f \1 removes it\)/);
    r = await run(['run', '--no-pull', missing, pod2], { timeoutMs: 120000 });
    assert.match(r.stderr, /CreateContainer[^]*localhost\/nope:2/);
    assert.doesNotMatch(r.stderr, /PullImage/);
    assert.equal((await run(['rmp', '-f', 'left-pod'])).code, 0); // the newest of the two
    assert.equal((await run(['rmp', '-f', 'left-pod'])).code, 0);
    // create pulls only with pull-image-on-create (or --with-pull)
    const cfg = path.join(dir, 'pull.yaml');
    fs.writeFileSync(cfg, 'pull-image-on-create: true\n');
    r = await run(['create', pod, missing, podFile]);
    assert.match(r.stderr, /CreateContainer/);
    r = await run(['-c', cfg, 'create', pod, missing, podFile]);
    assert.match(r.stderr, /PullImage/);
    r = await run(['-c', cfg, 'create', '--no-pull', pod, missing, podFile]);
    assert.match(r.stderr, /CreateContainer/);
    r = await run(['create', '--with-pull', '--no-pull', pod, missing, podFile]);
    assert.equal(r.code, 2);
    assert.equal((await run(['rm', '-f', id])).code, 0);
    assert.equal((await run(['rmp', '-f', yamlPodId])).code, 0);
  });

  test('stats, statsp, imagefsinfo: crictl\'s tables, a busy loop\'s CPU %, json, -w until ^C', async () => {
    const burner = await mk('burner', { command: ['sh', '-c', 'while :; do :; done'] });
    let r = await run(['stats', '--id', 'burner', '-s', '1']);
    assert.equal(r.code, 0, r.stderr);
    let lines = r.stdout.trim().split('\n');
    assert.match(lines[0], /^CONTAINER +NAME +CPU % +MEM +DISK +INODES +SWAP$/);
    assert.equal(lines.length, 2, r.stdout);
    const cells = lines[1].split(/ {2,}/);
    assert.equal(cells[0], burner.slice(0, 13));
    assert.equal(cells[1], 'burner');
    assert.ok(Number(cells[2]) > 0, `a busy loop uses the CPU: ${cells[2]} %`);
    assert.match(cells[3], /^[\d.]+(B|kB|MB)$/);
    r = await run(['stats', '-o', 'json', burner]);
    const st = JSON.parse(r.stdout).stats;
    assert.deepEqual(st.map((x) => x.attributes.id), [burner]);
    assert.ok(st[0].memory.workingSetBytes.value > 0);
    r = await run(['stats', '-a', '-s', '1', '-p', pod]);
    assert.match(r.stdout, new RegExp(`\\n${sleeper.slice(0, 13)} +sleeper +`));
    // The same two samples: the busy loop used more CPU than the sleeper (how
    // much depends on the machine's load).
    const cpu = (name) => Number(r.stdout.match(new RegExp(`\\n\\S+ +${name} +([\\d.]+) `))[1]);
    assert.ok(cpu('burner') > cpu('sleeper'), r.stdout);
    r = await run(['statsp', '-s', '1']);
    assert.match(r.stdout, new RegExp(`^POD +POD ID +CPU % +MEM\nctl-pod +${pod.slice(0, 13)} +[\\d.]+ +[\\d.]+(B|kB|MB)\n`));
    r = await run(['statsp', '-o', 'yaml', 'ctl-pod']);
    assert.match(r.stdout, new RegExp(`^stats:\n- attributes:\n    id: ${pod}\n`));
    const w = await ctlBackground(['-r', sd.endpoint, 'stats', '-w', '-s', '1', '--id', burner],
      { ready: /burner[^]*burner/ });
    const ex = await w.stop('SIGINT');
    assert.deepEqual([ex.code, ex.signal], [0, null], w.err());
    assert.doesNotMatch(w.out(), /\x1b\[2J/, 'no screen clearing into a pipe');
    r = await run(['imagefsinfo']);
    const fsinfo = JSON.parse(r.stdout).status.imageFilesystems[0];
    const grpc = await sd.img.ImageFsInfo({});
    assert.equal(fsinfo.fsId.mountpoint, grpc.image_filesystems[0].fs_id.mountpoint);
    assert.equal(String(fsinfo.usedBytes.value), String(grpc.image_filesystems[0].used_bytes.value));
    assert.ok(fsinfo.fsId.mountpoint.startsWith(sd.stateDir), fsinfo.fsId.mountpoint);
    r = await run(['imagefsinfo', '-o', 'table']);
    assert.match(r.stdout, /^Container Filesystem \nImage Filesystem \nTimeStamp\[0\]: \d+\nDisk\[0\]: [\d.]+[kM]?B\nInodes\[0\]: \d+\nMountpoint\[0\]: \//);
    assert.equal((await run(['rm', '-f', burner])).code, 0);
  });

  test('update: crictl\'s flags, the new limits read inside the container', async () => {
    const u = await mk('upd', { command: ['sleep', '3600'] });
    const r = await run(['update', ...UPDATE_FLAGS, 'upd']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${u}\n`);
    onSluiced.update = await inside(u, CGROUP_READ);
    assert.equal(onSluiced.update, '134217728\n20000\n100000\n256\n0\n');
    for (const [args, re] of [[['--memory', '1k'], /--memory: "1k" is not an integer/],
      [['--cpu-count', '2'], /Windows containers/]]) {
      const b = await run(['update', ...args, u]);
      assert.equal(b.code, 2);
      assert.match(b.stderr, re);
    }
    const bad = await run(['update', '--memory', '1000', u]); // the runtime refuses, by name
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /memory_limit_in_bytes/);
    assert.equal((await run(['rm', '-f', u])).code, 0);
  });

  test('logs: --since (duration, time, Unix seconds), --limit-bytes, -p, -r, -t as crictl', async () => {
    const logDir = path.join(dir, 'logs');
    const f0 = path.join(logDir, 'chat', '0.log');
    const f1 = path.join(logDir, 'chat', '1.log');
    fs.mkdirSync(path.dirname(f0), { recursive: true });
    const a0 = await mk('chat', { log_path: 'chat/0.log', command: ['sh', '-c', 'echo a0; echo e0 >&2; exit 3'] });
    await sd.waitState(a0, 'CONTAINER_EXITED');
    fs.appendFileSync(f0, 'not a CRI record\n'); // skipped, as the kubelet does
    const a1 = await mk('chat', { metadata: { name: 'chat', attempt: 1 }, log_path: 'chat/1.log',
      command: ['sh', '-c', 'echo b1; until [ -f /tmp/go ]; do sleep 0.1; done; echo b2; sleep 3600'] });
    await waitLog(f1, / stdout F b1\n/);
    await sleep(B_GAP_MS);
    await inside(a1, 'touch /tmp/go');
    const text = await waitLog(f1, / stdout F b2\n/);
    onSluiced.logs = await logViews(run, 'chat'); // the time-bound view first
    assert.deepEqual(onSluiced.logs.since, [0, 'b2\n', ''], 'b1 is over 6 s old');
    let r = await run(['logs', 'chat']); // the name means the newest attempt
    assert.equal(r.stdout, 'b1\nb2\n');
    const b2ts = text.match(/^(\S+) stdout F b2$/m)[1];
    const b2sec = Math.floor(Date.parse(b2ts) / 1000);
    r = await run(['logs', '--since', new Date(b2sec * 1000).toISOString().replace('.000Z', 'Z'), 'chat']);
    assert.equal(r.stdout, 'b2\n');
    r = await run(['logs', '--since', String(b2sec + 1), 'chat']);
    assert.equal(r.stdout, '');
    r = await run(['logs', '--since', '2099-01-01', 'chat']);
    assert.equal(r.stdout, '');
    r = await run(['logs', '--since', 'yesterday', 'chat']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--since "yesterday": not a duration/);
    r = await run(['logs', '--limit-bytes', '4', 'chat']);
    assert.equal(r.stdout, 'b1\nb');
    r = await run(['logs', '-t', '--limit-bytes', '40', 'chat']);
    assert.equal(r.stdout.length, 40);
    assert.match(r.stdout, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z b1\n\d{4}-/);
    assert.equal((await run(['logs', '--limit-bytes', '0', 'chat'])).stdout, '');
    r = await run(['logs', '-p', 'chat']);
    assert.equal(r.stdout, 'a0\n');
    assert.equal(r.stderr, 'e0\n');
    r = await run(['logs', '-p', a0]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /previous terminated container chat not found/);
    // -r: the runtime reopens the file (after a rotation by hand), new lines go there
    fs.renameSync(f1, `${f1}.1`);
    r = await run(['logs', '-r', 'chat']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    await inside(a1, 'echo b3 > /proc/1/fd/1');
    await waitLog(f1, / stdout F b3\n/);
    assert.equal((await run(['logs', 'chat'])).stdout, 'b3\n');
    // rm removes the log and its rotations (crictl's rm); -k keeps them
    r = await run(['rm', 'chat']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is running: stop it first, or rm -f/);
    assert.equal((await run(['rm', '-k', a0])).code, 0);
    assert.ok(fs.existsSync(f0));
    assert.equal((await run(['rm', '-f', a1])).code, 0);
    assert.ok(!fs.existsSync(f1) && !fs.existsSync(`${f1}.1`), 'log and rotation removed');
  });

  test('ps --image by name, ID, ID prefix (as crictl, by image ID); --namespace; -r; -q of inspect and info', async () => {
    const imgId = (await run(['images', '-q', BUSYBOX_IMAGE])).stdout.trim();
    const all = (await run(['ps', '-a', '-q'])).stdout;
    assert.ok(all.includes(sleeper));
    for (const ref of [BUSYBOX_IMAGE, 'localhost/sluice/busybox', imgId, imgId.slice(7, 19), imgId.slice(0, 19)]) {
      const r = await run(['ps', '-a', '-q', '--image', ref]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, all, ref);
    }
    assert.equal((await run(['ps', '-a', '-q', '--image', 'localhost/sluice/pause'])).stdout, '');
    assert.equal((await run(['ps', '-a', '-q', '--image', 'nothing-like-it'])).stdout, '');
    assert.equal((await run(['ps', '-a', '-q', '--namespace', '^ctl-ns$'])).stdout, all);
    assert.equal((await run(['ps', '-a', '-q', '--namespace', 'other'])).stdout, '');
    assert.match((await run(['ps', '-r', '--name', '^sleeper$'])).stdout, new RegExp(`\\n${sleeper.slice(0, 13)} +${BUSYBOX_IMAGE} `));
    let r = await run(['inspect', '-q', sleeper]);
    assert.deepEqual(Object.keys(JSON.parse(r.stdout)), ['status']);
    assert.ok(Object.keys(JSON.parse((await run(['inspect', sleeper])).stdout).info).length > 0);
    r = await run(['info', '-q']); // status (and the handler list, as crictl), no info documents
    const keys = Object.keys(JSON.parse(r.stdout));
    assert.ok(keys.includes('status') && keys.every((k) => ['status', 'runtimeHandlers', 'features'].includes(k)), keys);
    assert.ok(Object.keys(JSON.parse((await run(['info'])).stdout)).length > keys.length);
  });

  test('attach -t to a container without a terminal is refused (its stderr would be lost)', async () => {
    const r = await run(['attach', '-t', sleeper]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /has no terminal \(its config has tty: false\): attach without -t/);
    onSluiced.execT = (await run(['exec', '-t', sleeper, 'sh', '-c', 'echo $TERM'])).stdout;
    assert.equal(onSluiced.execT, 'xterm\r\n');
    assert.equal(await inside(sleeper, 'echo ${TERM:-unset}'), 'unset\n', 'no terminal, no TERM');
  });

  test('events: GetContainerEvents as they happen (json and yaml), ^C ends it with 0', async () => {
    const ev = await ctlBackground(['-r', sd.endpoint, 'events'], { ready: null });
    const evy = await ctlBackground(['-r', sd.endpoint, 'events', '-o', 'yaml'], { ready: null });
    await sleep(500);
    const id = await mk('evented', { command: ['sh', '-c', 'exit 0'] });
    await sd.waitState(id, 'CONTAINER_EXITED');
    assert.equal((await run(['rm', id])).code, 0);
    const want = ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT',
      'CONTAINER_DELETED_EVENT'];
    const end = Date.now() + 10000;
    while (!want.every((t) => ev.out().includes(t) && evy.out().includes(t)) && Date.now() < end) await sleep(100);
    const r = await ev.stop('SIGINT');
    const ry = await evy.stop('SIGINT');
    assert.deepEqual([r.code, ry.code], [0, 0], `${ev.err()} ${evy.err()}`);
    const docs = ev.out().split(/(?<=\n})\n(?={)/).map((d) => JSON.parse(d)).filter((e) => e.containerId === id);
    assert.deepEqual(docs.map((e) => e.containerEventType), want);
    assert.ok(docs.every((e) => e.createdAt > 0 && e.podSandboxStatus.id === pod));
    assert.match(evy.out(), new RegExp(`(^|\\n)---\\ncontainerId: ${id}\\ncontainerEventType: CONTAINER_CREATED_EVENT\\n`));
  });

  test('-o yaml wherever crictl has it: the same document as -o json (read by js-yaml)', async () => {
    const both = async (...args) => {
      const j = await run([...args, '-o', 'json']);
      const y = await run([...args, '-o', 'yaml']);
      assert.deepEqual([j.code, y.code], [0, 0], `${args}: ${j.stderr}${y.stderr}`);
      return [JSON.parse(j.stdout), yaml.load(y.stdout, { schema: yaml.CORE_SCHEMA })];
    };
    // Leaves replaced by their types: for answers whose numbers move
    // (usageNanoCores comes once the runtime holds two CPU samples).
    const shape = (v) => (Array.isArray(v) ? v.map(shape)
      : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v)
        .filter(([k]) => k !== 'usageNanoCores').map(([k, x]) => [k, shape(x)]))
        : typeof v);
    for (const args of [['version'], ['info'], ['pods'], ['inspectp', pod], ['ps', '-a'], ['inspect', sleeper],
      ['images'], ['inspecti', BUSYBOX_IMAGE], ['runtime-config']]) {
      const [j, y] = await both(...args);
      if (args[0] === 'inspectp') { // the status's time of each answer (EventedPLEG)
        assert.deepEqual([typeof j.timestamp, typeof y.timestamp], ['number', 'number']);
        delete j.timestamp;
        delete y.timestamp;
      }
      assert.deepEqual(y, j, args.join(' '));
    }
    for (const args of [['stats', sleeper], ['statsp', pod], ['imagefsinfo'], ['metricsp']]) {
      const [j, y] = await both(...args);
      assert.deepEqual(shape(y), shape(j), args.join(' '));
    }
  });

  test('runtime-config, update-runtime-config (seen in info), metricsp (json, yaml, -w), checkpoint refused', async () => {
    let r = await run(['runtime-config']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'cgroup driver:   CGROUPFS\n');
    assert.deepEqual(JSON.parse((await run(['runtime-config', '-o', 'json'])).stdout), { linux: { cgroupDriver: 'CGROUPFS' } });
    assert.equal((await run(['runtime-config', '-o', 'yaml'])).stdout, 'linux:\n  cgroupDriver: CGROUPFS\n');
    const cidr = '10.99.0.0/16,fd00:99::/64';
    r = await run(['update-runtime-config', '-p', cidr]);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', 'Runtime config successfully updated\n']);
    assert.equal(JSON.parse((await run(['info'])).stdout).podCIDR, cidr);
    r = await run(['update-runtime-config', '--pod-cidr', '10.99.0.0/99']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /runtime_config\.network_config\.pod_cidr: "10\.99\.0\.0\/99" is not one or two/);
    assert.equal((await run(['update-runtime-config'])).code, 2, 'crictl shows its help without -p');
    // metricsp: the sleeper's metrics, with containerd's labels.
    r = await run(['metricsp']);
    assert.equal(r.code, 0, r.stderr);
    const pm = JSON.parse(r.stdout).podMetrics.find((m) => m.podSandboxId === pod);
    const cm = pm.containerMetrics.find((m) => m.containerId === sleeper);
    const names = cm.metrics.map((m) => m.name);
    assert.ok(names.includes('container_cpu_usage_seconds_total') && names.includes('container_memory_working_set_bytes'), names);
    const ws = cm.metrics.find((m) => m.name === 'container_memory_working_set_bytes');
    assert.ok(ws.labelValues.includes('sleeper') && Number(ws.value.value) > 0, JSON.stringify(ws));
    r = await run(['metricsp', '-o', 'yaml']);
    assert.match(r.stdout, new RegExp(`^podMetrics:\n- podSandboxId: ${pod}\n`));
    assert.equal((await run(['metricsp', '-o', 'table'])).code, 2, 'json or yaml only, as crictl');
    const w = await ctlBackground(['-r', sd.endpoint, 'metricsp', '-w', '-o', 'yaml'], { ready: /podMetrics[^]*podMetrics/ });
    const ex = await w.stop('SIGINT');
    assert.deepEqual([ex.code, ex.signal], [0, null], w.err());
    assert.match(w.out(), /^---\npodMetrics:\n/);
    r = await run(['checkpoint', '-e', path.join(dir, 'cp.tar'), 'sleeper']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`CheckpointContainer is not implemented: sluice has no checkpoint/restore \\(CRIU\\); container "${sleeper}"`));
    assert.ok(!fs.existsSync(path.join(dir, 'cp.tar')));
    r = await run(['checkpoint', 'sleeper']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--export \/path\/to\/checkpoint\.tar/);
  });

  test('stopp, rmp (-f), and nothing is left', async () => {
    let r = await run(['stopp', 'ctl-pod']);
    assert.equal(r.stdout, `Stopped sandbox ${pod}\n`);
    r = await run(['pods', '-q', '-s', 'notready']);
    assert.equal(r.stdout, `${pod}\n`);
    assert.equal((await run(['ps', '-q'])).stdout, '', 'no container runs in a stopped pod');
    r = await run(['rmp', '-f', pod]);
    assert.equal(r.stdout, `Removed sandbox ${pod}\n`);
    assert.equal((await run(['pods', '-q'])).stdout, '');
    r = await run(['rmp', 'ctl-pod']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pod sandbox "ctl-pod" not found/);
    await sd.stop();
    sd = null;
  });
});

// ---- against containerd -----------------------------------------------------------

// A private containerd for this file (common rules: its own directory and
// stream port, apart from kube_logs.test.mjs's).
const CD_NAME = 'ops-ctl';
const CD_PORT = 10138;
function cdSkip() {
  return noBinary || skipReason() || containerdSkipReason();
}

describe('sluicectl against containerd 1.6 (Go streaming server)', { skip: cdSkip() }, () => {
  let ref;
  let endpoint;
  let dir;
  let run;
  let pod;
  let sleeper;
  let echoPort;
  let mk;

  before(async () => {
    ref = await PrivateContainerd.start(CD_NAME, CD_PORT);
    endpoint = ref.env.CONTAINERD_ENDPOINT;
    dir = tmpDir('cd');
    // A longer call timeout than the default 2 s: containerd on the loaded machine.
    run = (args, opts) => ctl(['-r', endpoint, '-t', '10s', ...args], opts);
    const podFile = path.join(dir, 'pod.json');
    fs.writeFileSync(podFile, JSON.stringify({
      metadata: { name: 'ctl-cd', uid: `ctl-cd-${process.pid}`, namespace: 'ctl', attempt: 0 },
      log_directory: path.join(dir, 'logs'),
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER' } } },
    }));
    const rp = await run(['runp', podFile]);
    assert.equal(rp.code, 0, rp.stderr);
    pod = rp.stdout.trim();
    mk = async (name, cfg) => {
      const f = path.join(dir, `${name}.json`);
      fs.writeFileSync(f, JSON.stringify({ metadata: { name }, image: { image: BUSYBOX_IMAGE }, log_path: `${name}.log`, ...cfg }));
      const cr = await run(['create', pod, f, podFile]);
      assert.equal(cr.code, 0, cr.stderr);
      const id = cr.stdout.trim();
      const st = await run(['start', id]);
      assert.equal(st.code, 0, st.stderr);
      return id;
    };
    sleeper = await mk('sleeper', { command: ['sleep', '3600'] });
    echoPort = await freePort();
    await mk('echo', { command: ['nc', '-ll', '-p', String(echoPort), '-e', 'cat'] });
  });
  after(async () => {
    if (pod && run) await run(['rmp', '-f', pod]).catch(() => {});
    await ref?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('crictl parity, the same as on sluiced: update seen inside, logs --since/-p/--limit-bytes, ps --image, attach -t, TERM', async () => {
    const waitLog = async (file, re) => {
      for (let i = 0; i < 150 && !re.test(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''); i++)
        await sleep(100);
      assert.match(fs.readFileSync(file, 'utf8'), re);
    };
    const u = await mk('upd', { command: ['sleep', '3600'] });
    let r = await run(['update', ...UPDATE_FLAGS, 'upd']);
    assert.equal(r.code, 0, r.stderr);
    r = await run(['exec', u, 'sh', '-c', CGROUP_READ]);
    assert.equal(r.stdout, '134217728\n20000\n100000\n256\n0\n');
    if (onSluiced.update) assert.equal(r.stdout, onSluiced.update, 'both runtimes apply the same limits');
    r = await run(['exec', '-t', sleeper, 'sh', '-c', 'echo $TERM']);
    assert.equal(r.stdout, 'xterm\r\n');
    if (onSluiced.execT) assert.equal(r.stdout, onSluiced.execT);
    r = await run(['attach', '-t', sleeper]); // containerd leaves a false tty out of its info
    assert.equal(r.code, 1);
    assert.match(r.stderr, /has no terminal \(its config has tty: false\)/);
    // ImageStatus by name (containerd 1.6's ListImages ignores the filter:
    // `images -q NAME` lists the pause image too, in no fixed order).
    r = await run(['inspecti', '-o', 'json', BUSYBOX_IMAGE]);
    assert.equal(r.code, 0, r.stderr);
    const imgId = JSON.parse(r.stdout).status.id;
    assert.match(imgId, /^sha256:[0-9a-f]{64}$/);
    r = await run(['-D', 'ps', '-q', '--image', imgId.slice(7, 19)]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(sleeper), `${imgId}: ${r.stdout}\n${r.stderr}`);
    assert.equal((await run(['ps', '-a', '-q', '--image', 'nothing-like-it'])).stdout, '');
    const logDir = path.join(dir, 'logs');
    fs.mkdirSync(path.join(logDir, 'chat'), { recursive: true });
    const a0 = await mk('chat', { log_path: 'chat/0.log', command: ['sh', '-c', 'echo a0; echo e0 >&2; exit 3'] });
    await waitLog(path.join(logDir, 'chat/0.log'), / stderr F e0\n/);
    for (let i = 0; i < 100 && JSON.parse((await run(['inspect', a0])).stdout).status.state !== 'CONTAINER_EXITED'; i++)
      await sleep(100);
    const a1 = await mk('chat', { metadata: { name: 'chat', attempt: 1 }, log_path: 'chat/1.log',
      command: ['sh', '-c', 'echo b1; until [ -f /tmp/go ]; do sleep 0.1; done; echo b2; sleep 3600'] });
    await waitLog(path.join(logDir, 'chat/1.log'), / stdout F b1\n/);
    await sleep(B_GAP_MS);
    assert.equal((await run(['exec', a1, 'touch', '/tmp/go'])).code, 0);
    await waitLog(path.join(logDir, 'chat/1.log'), / stdout F b2\n/);
    const views = await logViews(run, 'chat');
    assert.deepEqual(views.since, [0, 'b2\n', '']);
    assert.deepEqual(views.prev, [0, 'a0\n', 'e0\n']);
    if (onSluiced.logs) assert.deepEqual(views, onSluiced.logs, 'both runtimes show the same logs');
    r = await run(['stats', '--id', u, '-s', '1']);
    assert.match(r.stdout, new RegExp(`^CONTAINER +NAME +CPU % +MEM +DISK +INODES +SWAP\n${u.slice(0, 13)} +upd +[\\d.]+ `));
    r = await run(['imagefsinfo', '-o', 'table']);
    assert.match(r.stdout, /^Container Filesystem \nImage Filesystem \nTimeStamp\[0\]: \d+\nDisk\[0\]: [\d.]+[kM]?B\n/);
    r = await run(['events']); // containerd 1.6 answers GetContainerEvents with Unimplemented
    assert.equal(r.code, 1);
    assert.match(r.stderr, /GetContainerEvents: the runtime at .* does not implement it/);
    // Newer than containerd 1.6 as well: RuntimeConfig, ListPodSandboxMetrics, CheckpointContainer.
    for (const [args, method] of [[['runtime-config'], 'RuntimeConfig'], [['metricsp'], 'ListPodSandboxMetrics'],
      [['checkpoint', '-e', path.join(dir, 'cp.tar'), sleeper], 'CheckpointContainer']]) {
      r = await run(args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, new RegExp(`${method}: the runtime at .* does not implement it`));
    }
    r = await run(['update-runtime-config', '-p', '10.99.0.0/16']);
    assert.deepEqual([r.code, r.stderr], [0, 'Runtime config successfully updated\n']);
    r = await run(['update-runtime-config', '-p', '10.99.0.0/99']); // refused by both runtimes
    assert.equal(r.code, 1);
    assert.match(r.stderr, /invalid CIDR address: 10\.99\.0\.0\/99/);
    for (const id of [u, a0, a1]) assert.equal((await run(['rm', '-f', id])).code, 0);
  });

  test('version and ps through the C gRPC client', async () => {
    assert.match((await run(['version'])).stdout, /RuntimeName: +containerd/);
    assert.match((await run(['ps'])).stdout, /sleeper/);
  });

  test('exec: SPDY (v4) and legacy WebSocket (v4.channel.k8s.io) exit codes; stdin EOF over SPDY', async () => {
    let r = await run(['exec', sleeper, 'sh', '-c', 'echo o; echo e >&2; exit 3']);
    assert.deepEqual([r.code, r.stdout, r.stderr], [3, 'o\n', 'e\n']);
    r = await run(['-D', 'exec', '-r', 'websocket', sleeper, 'sh', '-c', 'echo ws; exit 5']);
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.stdout, 'ws\n');
    assert.match(r.stderr, /upgraded: v4\.channel\.k8s\.io/);
    r = await run(['exec', '-i', sleeper, 'wc', '-c'], { input: Buffer.alloc(100000, 1) });
    assert.equal(r.stdout.trim(), '100000');
  });

  test('attach over SPDY and legacy WebSocket (a stdin_once reader)', async () => {
    for (const t of ['spdy', 'websocket']) {
      const id = await mk(`reader-${t}`, { command: ['sh', '-c', 'read x; echo got-$x'], stdin: true, stdin_once: true });
      await sleep(300);
      const r = await run(['attach', '-i', '-r', t, id], { input: `line-${t}\n`, timeoutMs: 20000 });
      assert.equal(r.code, 0, `${t}: ${r.stderr}`);
      assert.equal(r.stdout, `got-line-${t}\n`);
    }
  });

  test('port-forward: SPDY and legacy WebSocket; tunnelled WebSocket refused (403) → SPDY', async () => {
    for (const t of ['spdy', 'legacy', 'websocket']) {
      const l1 = await freePort();
      const pf = await ctlBackground(['-D', '-r', endpoint, 'port-forward', '-r', t, '--address', '127.0.0.1',
        pod, `${l1}:${echoPort}`], { ready: /Forwarding from/ });
      try {
        const res = await Promise.all([0, 1, 2].map((i) => tcpRoundTrip(l1, Buffer.from(`cd ${t} ${i}\n`))));
        res.forEach((m, i) => assert.equal(m.data.toString(), `cd ${t} ${i}\n`, `${t} ${i}: ${m.error}`));
        if (t === 'websocket')
          assert.match(pf.err(), /tunnelled WebSocket refused \(upgrade refused: 403.*\); falling back to SPDY/);
      } finally {
        assert.equal((await pf.stop('SIGINT')).code, 0, pf.err());
      }
    }
  });
});
