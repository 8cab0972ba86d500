// sluice-kube's secrets and state (issue 13): the bearer token from a file
// or $SLUICE_KUBE_TOKEN (not in ps; --token still works, with a warning),
// the self-signed serving pair kept in --cert-dir (key 0600) and reused,
// so a kubeconfig made at the first start works after a restart, the
// operator's pair via --tls-cert-file/--tls-private-key-file, the address
// really listened on, and the warning for a listener beyond loopback
// without TLS and a token. kubectl 1.32 is the client.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  freePort, KubeFront, kubeSkipReason, runPodRetry, SLUICE_KUBE, stopSluiced,
} from './lib/kubefront.mjs';
import { SluicedInstance, monitorsUnder, skipReason, sleep } from './lib/sluiced.mjs';

const NS = 'sluice-test';
const TOKEN = 'kfs-6a1f0c2e9d-token';

// The command line ps shows for pid.
function psArgs(pid) {
  return spawnSync('ps', ['-ww', '-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).stdout;
}

function mode(p) {
  return fs.statSync(p).mode & 0o777;
}

describe('sluice-kube token, certificate state and listener', {
  skip: skipReason() || kubeSkipReason(), timeout: 180000,
}, () => {
  let sd;
  let dir;
  const fronts = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kfs-'));
    sd = await SluicedInstance.start({ label: 'kfstate' });
    const pod = await runPodRetry(sd, 'kfs', { hostNetwork: true });
    await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
  }, { timeout: 90000 });

  after(async (t) => {
    for (const kf of fronts) kf.destroy();
    if (sd) {
      // The pod's monitor exits after RemovePodSandbox answered; under ASan on
      // a loaded machine that can take longer than sd.stop() waits: wait here
      // (a monitor that never exits still fails the check in stop).
      await sd.removeAllPods().catch(() => {});
      for (let i = 0; i < 100 && monitorsUnder(sd.root).length; i++) await sleep(100);
      await stopSluiced(sd, t);
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60000 });

  async function front(opts) {
    const kf = await KubeFront.start({ endpoint: sd.endpoint, ...opts });
    fronts.push(kf);
    return kf;
  }

  async function execEcho(kf, kubeconfig, word) {
    const r = await kf.kubectl(['-n', NS, 'exec', 'kfs', '--', 'echo', word],
      { env: { KUBECONFIG: kubeconfig } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), `${word}\n`);
  }

  test('--token-file and --cert-dir: a first-start kubeconfig works after a restart', async () => {
    const certDir = path.join(dir, 'state', 'kube');
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const port = await freePort();
    const opts = { tls: true, token: TOKEN, tokenFile, certDir, port };

    const first = await front(opts);
    assert.match(first.stdout, /made a new certificate .*serving\.crt and key .*serving\.key \(none stored\)/);
    assert.equal(mode(path.join(certDir, 'serving.key')), 0o600);
    assert.equal(mode(certDir), 0o700);
    assert.doesNotMatch(psArgs(first.proc.pid), new RegExp(TOKEN));
    assert.match(psArgs(first.proc.pid), /--token-file/);
    assert.doesNotMatch(first.stderr, /--token shows in ps/);
    const kubeconfig = path.join(dir, 'kubeconfig-first');
    fs.writeFileSync(kubeconfig, first.kubeconfigText);
    assert.match(first.kubeconfigText, new RegExp(`token: ${TOKEN}`));
    await execEcho(first, kubeconfig, 'before');
    const key = fs.readFileSync(path.join(certDir, 'serving.key'));
    await first.stop();

    const second = await front(opts);
    assert.match(second.stdout, /reusing the certificate .*serving\.crt and key .*serving\.key/);
    assert.deepEqual(fs.readFileSync(path.join(certDir, 'serving.key')), key);
    await execEcho(second, kubeconfig, 'after-restart');
    const r = await second.kubectl(['get', 'pods', '-A', '--token', 'wrong'],
      { env: { KUBECONFIG: kubeconfig } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Unauthorized/);
    await second.stop();

    // The same pair as the operator's files: the old kubeconfig still verifies it.
    const third = await front({ tls: true, token: TOKEN, tokenFile, port,
      tlsFiles: { cert: path.join(certDir, 'serving.crt'), key: path.join(certDir, 'serving.key') } });
    assert.doesNotMatch(third.stdout, /certificate .* and key/);
    await execEcho(third, kubeconfig, 'operator-pair');
    await third.stop();
  });

  test('$SLUICE_KUBE_TOKEN: required, and not in ps', async () => {
    // (TLS: kubectl sends no bearer token over plain HTTP)
    const kf = await front({ token: TOKEN, tokenEnv: true, tls: true });
    assert.doesNotMatch(psArgs(kf.proc.pid), new RegExp(TOKEN));
    assert.equal((await kf.request('/api/v1/pods', { token: null })).status, 401);
    assert.equal((await kf.request('/api/v1/pods')).status, 200);
    const r = await kf.kubectl(['get', 'pods', '-n', NS]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.toString(), /^kfs\s+1\/1\s+Running/m);
    await kf.stop();
  });

  test('--token still works and warns that it shows in ps', async () => {
    const kf = await front({ token: TOKEN });
    assert.match(kf.stderr, /warning: --token shows in ps and \/proc\/PID\/cmdline; use --token-file or \$SLUICE_KUBE_TOKEN/);
    assert.equal((await kf.request('/api/v1/pods')).status, 200);
    await kf.stop();
  });

  test('--address 0.0.0.0 without TLS and token: the real listener and a warning', async () => {
    const kf = await front({ address: '0.0.0.0' });
    assert.match(kf.stdout, new RegExp(`^sluice-kube: listening on 0\\.0\\.0\\.0:${kf.port}$`, 'm'));
    assert.match(kf.stderr, new RegExp(`warning: listening on 0\\.0\\.0\\.0:${kf.port}, beyond loopback, ` +
      'without TLS and without a token: anyone who reaches it can exec into every pod'));
    await kf.stop();
    const lo = await front({});
    assert.match(lo.stdout, new RegExp(`^sluice-kube: listening on 127\\.0\\.0\\.1:${lo.port}$`, 'm'));
    assert.doesNotMatch(lo.stderr, /warning/);
    await lo.stop();
  });

  test('bad token sources are refused at start', () => {
    const empty = path.join(dir, 'empty-token');
    fs.writeFileSync(empty, '\n');
    const cases = [
      [['--token-file', empty], /--token-file .*empty-token: not one line of visible characters/],
      [['--token-file', path.join(dir, 'missing')], /--token-file .*missing: .*No such file or directory/],
      [['--token-file', empty, '--token', 'x'], /give --token-file or --token, not both/],
      [['--tls-cert-file', empty], /--tls-cert-file and --tls-private-key-file go together/],
    ];
    for (const [args, re] of cases) {
      const r = spawnSync(SLUICE_KUBE, [...args, '--port', '0'], { encoding: 'utf8', timeout: 10000 });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
    // an operator pair that does not load: exit 1, naming the file
    const missing = path.join(dir, 'nokey.pem');
    const r = spawnSync(SLUICE_KUBE, ['--port', '0', '--runtime-endpoint', 'unix:///nonexistent',
      '--tls-cert-file', empty, '--tls-private-key-file', missing], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^sluice-kube: .*nokey\.pem: No such file or directory$/m);
  });
});
