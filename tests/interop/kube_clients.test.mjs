// Kubernetes client libraries other than kubectl through sluice-kube (TLS
// and a bearer token) to sluiced: @kubernetes/client-node's Exec, Attach
// and PortForward (WebSocket: v5 for exec/attach, the legacy v4 channel
// protocol with ?ports= for port-forward), and Debian's python3-kubernetes
// stream() exec and portforward() (WebSocket v4.channel.k8s.io). The front
// proxies each upgrade to the runtime byte for byte.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Attach, Exec, KubeConfig, PortForward } from '@kubernetes/client-node';
import { Collector } from './lib/kube.mjs';
import {
  freePort, KubeFront, kubeSkipReason, runPodRetry, sha256, sleep, stopSluiced, waitListening,
} from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const PY = '/usr/bin/python3';
const PY_SCRIPT = path.join(here, 'py/kube_stream.py');
const NS = 'sluice-test';
const SMALL = 1048583;

function pySkip() {
  const r = spawnSync(PY, ['-c', 'import kubernetes.stream'], { stdio: 'ignore' });
  return r.status !== 0 ? 'python3-kubernetes is not installed (apt-get install python3-kubernetes)' : false;
}

const skip = skipReason() || kubeSkipReason();
const TOKEN = `clients-${process.pid}`;

function kubeConfig(kf) {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'sluice', server: kf.url, caData: kf.ca().toString('base64') }],
    users: [{ name: 'sluice', token: TOKEN }],
    contexts: [{ name: 'sluice', cluster: 'sluice', user: 'sluice', namespace: NS }],
    currentContext: 'sluice',
  });
  return kc;
}

// Resolves when the socket closes.
function closed(ws) {
  return new Promise((resolve) => {
    if (ws.readyState === 3) resolve();
    else ws.on('close', (code) => resolve(code));
  });
}

describe('client libraries through sluice-kube', { skip, timeout: 150000 }, () => {
  let sd;
  let kf;
  let kc;
  let httpPort;
  let smallSum;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'kcli' });
    httpPort = await freePort();
    const web = await runPodRetry(sd, 'web', { hostNetwork: true });
    await sd.runContainer(web, 'c', {
      command: ['sh', '-c', `head -c ${SMALL} /dev/urandom > /tmp/small; ` +
        `exec httpd -f -p 127.0.0.1:${httpPort} -h /tmp`],
    });
    const reader = await runPodRetry(sd, 'reader', { hostNetwork: true });
    await sd.runContainer(reader, 'r', {
      stdin: true,
      command: ['sh', '-c', 'while read l; do echo "got:$l"; [ "$l" = quit ] && exit 0; done'],
    });
    kf = await KubeFront.start({ endpoint: sd.endpoint, token: TOKEN, tls: true });
    kc = kubeConfig(kf);
    await waitListening(httpPort);
    const r = await kf.kubectl(['-n', NS, 'exec', 'web', '--', 'sha256sum', '/tmp/small']);
    smallSum = r.stdout.toString().split(' ')[0];
    assert.match(smallSum, /^[0-9a-f]{64}$/, r.stderr);
  }, { timeout: 60000 });

  after(async () => {
    kf?.destroy();
    if (sd) await sd.destroy();
  }, { timeout: 60000 });

  test('client-node Exec: split streams and the NonZeroExitCode status', async () => {
    const out = new Collector();
    const err = new Collector();
    let status = null;
    const ws = await new Exec(kc).exec(NS, 'web', 'c', ['sh', '-c', 'echo out; echo err >&2; exit 3'],
      out, err, null, false, (s) => { status = s; });
    await closed(ws);
    assert.equal(out.text(), 'out\n');
    assert.equal(err.text(), 'err\n');
    assert.equal(status?.reason, 'NonZeroExitCode', JSON.stringify(status));
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  });

  test('client-node Exec: stdin to its end (v5 CLOSE), 1 MiB counted', async () => {
    const out = new Collector();
    const input = Readable.from([Buffer.alloc(1 << 20, 'q')]);
    let status = null;
    const ws = await new Exec(kc).exec(NS, 'web', 'c', ['wc', '-c'], out, null, input, false,
      (s) => { status = s; });
    await closed(ws);
    assert.equal(out.text().trim(), String(1 << 20));
    assert.equal(status?.status, 'Success');
  });

  test('client-node Attach: a line in, the container\'s answer out', async () => {
    const out = new Collector();
    const input = new PassThrough();
    const ws = await new Attach(kc).attach(NS, 'reader', 'r', out, null, input, false);
    input.write('hi\n');
    for (let i = 0; i < 50 && !out.text().includes('got:hi'); i++) await sleep(100);
    assert.match(out.text(), /got:hi\n/);
    ws.close();
    await closed(ws);
  });

  test('client-node PortForward: an HTTP GET through the forwarded port', async () => {
    const out = new Collector();
    const err = new Collector();
    const input = new PassThrough();
    const ws = await new PortForward(kc).portForward(NS, 'web', [httpPort], out, err, input);
    input.write('GET /small HTTP/1.0\r\nHost: x\r\n\r\n');
    const done = closed(ws);
    for (let i = 0; i < 200; i++) {
      const b = out.buffer();
      const at = b.indexOf('\r\n\r\n');
      if (at >= 0 && b.length - at - 4 >= SMALL) break;
      await sleep(50);
    }
    const b = out.buffer();
    const body = b.subarray(b.indexOf('\r\n\r\n') + 4);
    assert.match(b.subarray(0, 20).toString(), /^HTTP\/1\.[01] 200/);
    assert.equal(sha256(body), smallSum);
    assert.equal(err.text(), '');
    ws.close();
    await done;
  });

  test('client-node Exec into an unknown pod is refused (the front answers 404 Status)', async () => {
    await assert.rejects(new Exec(kc).exec(NS, 'nosuch', 'c', ['true'], null, null, null, false));
    const r = await kf.request(`/api/v1/namespaces/${NS}/pods/nosuch/exec?command=true&stdout=true`,
      { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'v5.channel.k8s.io' } });
    assert.equal(r.status, 404);
    assert.equal(JSON.parse(r.body).message, 'pods "nosuch" not found');
  });

  describe('python3-kubernetes', { skip: pySkip() }, () => {
    const py = (kase, pod, ...rest) => {
      const r = spawnSync(PY, [PY_SCRIPT, kase, kf.url, TOKEN, kf.cert, NS, pod, ...rest],
        { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout.trim().split('\n').pop());
    };

    test('stream() exec: stdout, stderr and the return code', () => {
      const r = py('exec-streams', 'web');
      assert.equal(r.stdout, 'out\n');
      assert.equal(r.stderr, 'err\n');
      assert.equal(r.returncode, 3);
    });

    test('stream() exec with stdin (v4 has no stdin EOF: head -n 1)', () => {
      const r = py('exec-stdin', 'web');
      assert.equal(r.stdout, 'a line from python\n');
      assert.equal(r.returncode, 0);
    });

    test('portforward(): an HTTP GET through the socket, sha256 checked', () => {
      const r = py('portforward', 'web', String(httpPort));
      assert.match(r.status, /^HTTP\/1\.[01] 200/);
      assert.equal(r.length, SMALL);
      assert.equal(r.sha256, smallSum);
      assert.equal(r.error, null);
    });

    test('stream() exec into an unknown pod fails with 404', () => {
      const r = py('exec-missing', 'nosuch');
      assert.match(JSON.stringify(r), /404/);
    });
  });

  test('the front still serves, then exits 0 on SIGTERM', async () => {
    const r = await kf.kubectl(['get', 'pods', '-n', NS]);
    assert.equal(r.code, 0, r.stderr);
    await kf.stop();
    kf = null;
  });

  test('sluiced stops clean', async (t) => {
    await stopSluiced(sd, t);
    sd = null;
  }, { timeout: 60000 });
});
