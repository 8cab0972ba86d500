// TLS on sluiced's streaming port (stream-tls-cert-file, -key-file,
// -client-ca-file). Certificates are made here with the openssl CLI: a CA,
// a server certificate for 127.0.0.1, a client certificate from the CA and
// one from another CA. Independent clients: Node `ws` (WebSocket v5 over
// wss), with and without client certificates; a raw TCP socket speaking
// plain HTTP or stalling in the handshake; a `ws` client that stops
// reading during 256 MiB of exec output (sluiced, which terminates TLS,
// must stay within a few MiB). Bad TLS configuration stops sluiced with a
// message naming the key. Needs root, runc, busybox-static and openssl.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CH, V5, SUCCESS_JSON, connect, failureJson, runSession, terminateAll } from './lib/session.mjs';
import { SLUICED, SluicedInstance, skipReason, sleep, wsUrl } from './lib/sluiced.mjs';
import { KubeFront, TRANSPORTS, freePort, kubeSkipReason, waitOutput } from './lib/kubefront.mjs';

const haveOpenssl = spawnSync('openssl', ['version']).status === 0;
const skip = skipReason() || (!haveOpenssl && 'the openssl command is not installed');
const MiB = 1024 * 1024;
const BIG = 256 * MiB;
const STALL_MS = 5000;
// Growth of sluiced allowed while the client does not read: its proxy
// holds at most 256 KiB + one 64 KiB read per direction; the rest is
// allocator slack. The kernel's socket buffers are not sluiced's memory.
const MAX_GROWTH_KIB = 8 * 1024;
const HEAD_TIMEOUT_MS = 1500;
const NS = 'sluice-test';
const KUBE_BLOB = 4 * MiB;
const LINE = '0123456789abcdef';
const CRICTL = process.env.CRICTL || 'crictl';
const crictlSkip = spawnSync(CRICTL, ['--version'], { stdio: 'ignore' }).status === 0 ? false
  : 'no crictl (cri-tools is not packaged in Debian 12): set CRICTL=/path/to/crictl';

// sha256 of `yes LINE | head -c n`
function yesSha(n) {
  return crypto.createHash('sha256').update(Buffer.from(`${LINE}\n`.repeat(Math.ceil(n / 17)))
    .subarray(0, n)).digest('hex');
}

// Reads everything a TCP server at 127.0.0.1:port sends; resolves sha256, length.
function tcpHash(port) {
  return new Promise((resolve, reject) => {
    const h = crypto.createHash('sha256');
    let length = 0;
    const s = net.connect(port, '127.0.0.1');
    s.on('data', (d) => { h.update(d); length += d.length; });
    s.on('end', () => resolve({ sha256: h.digest('hex'), length }));
    s.on('error', reject);
  });
}

function openssl(dir, args) {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

// key + certificate signed by ca (self-signed when ca is null)
function makeCert(dir, name, subject, ca, ext) {
  const keyArgs = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-subj', subject];
  if (!ca) {
    openssl(dir, ['req', '-x509', ...keyArgs, '-out', `${name}.crt`, '-days', '2',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=keyCertSign']);
    return;
  }
  fs.writeFileSync(path.join(dir, `${name}.ext`), `${ext}\n`);
  openssl(dir, ['req', ...keyArgs, '-out', `${name}.csr`]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`,
    '-set_serial', String(crypto.randomInt(1, 2 ** 47)), '-days', '2',
    '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
}

export function makePki(dir) {
  makeCert(dir, 'ca', '/CN=sluice test CA', null);
  makeCert(dir, 'other-ca', '/CN=another CA', null);
  makeCert(dir, 'server', '/CN=127.0.0.1', 'ca',
    'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  makeCert(dir, 'client', '/CN=kube-apiserver', 'ca', 'extendedKeyUsage=clientAuth');
  makeCert(dir, 'wrong', '/CN=intruder', 'other-ca', 'extendedKeyUsage=clientAuth');
  const f = (n) => path.join(dir, n);
  return {
    ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key'), otherKey: f('client.key'),
    clientCert: f('client.crt'), clientKey: f('client.key'),
    wrongCert: f('wrong.crt'), wrongKey: f('wrong.key'),
  };
}

const tlsArgs = (pki, clientCa) => [
  '--stream-tls-cert-file', pki.cert, '--stream-tls-key-file', pki.key,
  ...(clientCa ? ['--stream-tls-client-ca-file', pki.ca] : []),
  '--head-timeout-ms', String(HEAD_TIMEOUT_MS),
];

const tlsOpts = (pki, who) => ({
  ca: fs.readFileSync(pki.ca),
  ...(who ? { cert: fs.readFileSync(who.cert), key: fs.readFileSync(who.key) } : {}),
});

function rssKiB(pid) {
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

// Resolves how a raw connection ended: 'close' after the server closed it.
function rawEnd(port, send, ms) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`open after ${ms} ms`)); }, ms);
    s.on('connect', () => { if (send) s.write(send); });
    s.on('data', (d) => { got = Buffer.concat([got, d]); });
    s.on('error', () => {}); // a reset is a close too
    s.on('close', () => { clearTimeout(timer); resolve(got); });
  });
}

async function version(sd) {
  const v = await sd.rt.Version({ version: '' });
  assert.equal(v.runtime_name, 'sluice');
}

describe('streaming over TLS', { skip, timeout: 300000 }, () => {
  let dir, pki, sd, sdMutual, ctr, ctrMutual;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-tls-'));
    pki = makePki(dir);
    // ASan keeps freed memory in quarantine, which would read as growth.
    sd = await SluicedInstance.start({ label: 'tls', args: tlsArgs(pki, false),
      asanOptions: 'quarantine_size_mb=4' });
    const pod = await sd.runPod('tls', { hostNetwork: true });
    ctr = await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
    sdMutual = await SluicedInstance.start({ label: 'tlsmut', args: tlsArgs(pki, true) });
    const pod2 = await sdMutual.runPod('tlsmut', { hostNetwork: true });
    ctrMutual = await sdMutual.runContainer(pod2, 'c', { command: ['sleep', '100000'] });
  }, { timeout: 120000 });

  after(async () => {
    terminateAll();
    if (sd) await sd.destroy();
    if (sdMutual) await sdMutual.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60000 });

  test('the URLs are https, and a wss v5 exec gives exact output and exit status', async () => {
    assert.match(sd.streamBase, /^https:\/\/127\.0\.0\.1:\d+\/$/);
    const url = await sd.execUrl(ctr, ['sh', '-c', 'echo out; echo err >&2; exit 3'],
      { stderr: true });
    assert.match(url, /^https:\/\//);
    const s = await runSession(wsUrl(url), { protocols: [V5], wsOptions: tlsOpts(pki) });
    assert.equal(s.protocol, V5);
    assert.equal(s.channel(CH.STDOUT).toString(), 'out\n');
    assert.equal(s.channel(CH.STDERR).toString(), 'err\n');
    assert.equal(s.channel(CH.ERROR).toString(), failureJson(3));
  });

  test('a client that does not trust the CA refuses the server', async () => {
    const url = await sd.execUrl(ctr, ['true']);
    await assert.rejects(connect(wsUrl(url), { protocols: [V5] }),
      /self[- ]signed|unable to (get|verify)|certificate/i);
    await version(sd);
  });

  test('client-ca: no certificate and a certificate of another CA are refused', async () => {
    for (const who of [null, { cert: pki.wrongCert, key: pki.wrongKey }]) {
      const url = await sdMutual.execUrl(ctrMutual, ['echo', 'no']);
      await assert.rejects(connect(wsUrl(url), { protocols: [V5], wsOptions: tlsOpts(pki, who) }),
        (e) => { console.log(`# ${who ? 'wrong CA' : 'no cert'}: ${e.code || ''} ${e.message}`); return true; });
    }
    await version(sdMutual);
  });

  test('client-ca: a certificate from the CA is served', async () => {
    const url = await sdMutual.execUrl(ctrMutual, ['sh', '-c', 'id -u; exit 0']);
    const s = await runSession(wsUrl(url), { protocols: [V5],
      wsOptions: tlsOpts(pki, { cert: pki.clientCert, key: pki.clientKey }) });
    assert.equal(s.channel(CH.STDOUT).toString(), '0\n');
    assert.equal(s.channel(CH.ERROR).toString(), SUCCESS_JSON);
  });

  test('plain HTTP to the TLS port is closed, sluiced keeps serving', async () => {
    const url = new URL(await sd.execUrl(ctr, ['true']));
    const got = await rawEnd(Number(url.port),
      `GET ${url.pathname} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      10000);
    assert.ok(!got.toString('latin1').startsWith('HTTP/1.1 101'), got.toString('latin1'));
    await version(sd);
    sd.proc.assertAlive();
  });

  test('a handshake that stalls is closed after head-timeout-ms', async () => {
    const port = new URL(sd.streamBase).port;
    // nothing at all, then half a ClientHello record header
    for (const send of [null, Buffer.from([0x16, 0x03, 0x01, 0x02])]) {
      const t0 = Date.now();
      await rawEnd(Number(port), send, HEAD_TIMEOUT_MS + 20000);
      assert.ok(Date.now() - t0 >= HEAD_TIMEOUT_MS - 100, `closed after ${Date.now() - t0} ms`);
    }
    await version(sd);
  });

  test(`256 MiB of exec stdout, the client stops reading ${STALL_MS / 1000} s: ` +
    'sluiced stays bounded, every byte arrives', async () => {
    const cmd = `yes 0123456789abcdef | head -c ${BIG}`;
    const want = spawnSync('sh', ['-c', `${cmd} | sha256sum`], { encoding: 'utf8' })
      .stdout.split(' ')[0];
    const url = await sd.execUrl(ctr, ['sh', '-c', cmd]);
    const h = crypto.createHash('sha256');
    let n = 0;
    let stalled = null;
    const pid = sd.proc.proc.pid;
    const t0 = Date.now();
    const s = await connect(wsUrl(url), { protocols: [V5], wsOptions: tlsOpts(pki),
      keep: (c) => c !== CH.STDOUT,
      sink: (c, d) => {
        if (c !== CH.STDOUT) return;
        h.update(d);
        n += d.length;
        if (n >= 16 * MiB && !stalled) {
          s.ws.pause();
          stalled = (async () => {
            const before = rssKiB(pid);
            let peak = before;
            for (let t = 0; t < STALL_MS; t += 250) {
              await sleep(250);
              peak = Math.max(peak, rssKiB(pid));
            }
            s.ws.resume();
            return { before, peak };
          })();
        }
      } });
    await s.waitClosed(240000);
    const secs = (Date.now() - t0) / 1000;
    const r = await stalled;
    console.log(`# sluiced RSS ${r.before} KiB before the stall, at most ${r.peak} KiB during it; ` +
      `${BIG / MiB} MiB in ${secs.toFixed(1)} s (stall included)`);
    assert.ok(r.peak - r.before < MAX_GROWTH_KIB, `sluiced grew ${r.peak - r.before} KiB`);
    assert.equal(n, BIG);
    assert.equal(h.digest('hex'), want);
    assert.equal(s.channel(CH.ERROR).toString(), SUCCESS_JSON);
  });
});

describe('bad TLS configuration stops sluiced, naming the key', { skip, timeout: 60000 }, () => {
  let dir, pki;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-tlsbad-'));
    pki = makePki(dir);
  });
  after(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

  const run = (args) => {
    // short: the run dir must leave room for monitor socket paths
    const root = fs.mkdtempSync('/tmp/sdb-');
    try {
      return spawnSync(SLUICED, ['--listen', `unix://${root}/s.sock`, '--state-dir',
        `${root}/state`, '--run-dir', `${root}/run`, '--stream-port', '0', ...args],
      { encoding: 'utf8', timeout: 30000 });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  };
  const cases = () => [
    ['a key that does not match the certificate',
      ['--stream-tls-cert-file', pki.cert, '--stream-tls-key-file', pki.otherKey],
      ['stream-tls-key-file', pki.otherKey, 'does not match'], 1],
    ['a certificate without a key', ['--stream-tls-cert-file', pki.cert],
      ['stream-tls-key-file', 'required'], 2],
    ['a key without a certificate', ['--stream-tls-key-file', pki.key],
      ['stream-tls-cert-file', 'required'], 2],
    ['an unreadable key file',
      ['--stream-tls-cert-file', pki.cert, '--stream-tls-key-file', `${dir}/missing.key`],
      ['stream-tls-key-file', `${dir}/missing.key`, 'No such file'], 1],
    ['a certificate file that is not PEM',
      ['--stream-tls-cert-file', pki.key, '--stream-tls-key-file', pki.key],
      ['stream-tls-cert-file', pki.key], 1],
    ['a client CA file that is not PEM',
      ['--stream-tls-cert-file', pki.cert, '--stream-tls-key-file', pki.key,
        '--stream-tls-client-ca-file', `${dir}/server.ext`],
      ['stream-tls-client-ca-file', `${dir}/server.ext`], 1],
  ];
  test('each bad configuration: non-zero exit, the message names the key and the file', () => {
    for (const [what, args, words, status] of cases()) {
      const r = run(args);
      // 2: the configuration is incomplete; 1: sluiced could not start with it
      assert.equal(r.status, status, `${what}: status ${r.status} ${r.stderr}`);
      assert.equal(r.signal, null, `${what}: ${r.signal}`);
      for (const w of words) assert.ok(r.stderr.includes(w), `${what}: "${w}" not in ${r.stderr}`);
      console.log(`# ${what}: ${r.stderr.trim().split('\n').pop()}`);
    }
  });
});

describe('kubectl through sluice-kube, and crictl, to a TLS streaming port', { skip: skip || kubeSkipReason(), timeout: 300000 }, () => {
  let dir, pki, sd, pfPort;
  const fronts = {};
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-tlsk-'));
    pki = makePki(dir);
    sd = await SluicedInstance.start({ label: 'tlsk', args: tlsArgs(pki, true) });
    const pod = await sd.runPod('tlsk', { hostNetwork: true });
    await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
    pfPort = await freePort();
    await sd.runContainer(pod, 'src', { command: ['sh', '-c',
      `while :; do yes ${LINE} | head -c ${KUBE_BLOB} | nc -l -p ${pfPort}; done`] });
    const args = ['--runtime-tls-ca-file', pki.ca, '--runtime-tls-cert-file', pki.clientCert,
      '--runtime-tls-key-file', pki.clientKey];
    for (const t of Object.keys(TRANSPORTS))
      fronts[t] = await KubeFront.start({ endpoint: sd.endpoint, args });
    fronts.nocert = await KubeFront.start({ endpoint: sd.endpoint, args: args.slice(0, 2) });
    fronts.noca = await KubeFront.start({ endpoint: sd.endpoint });
  }, { timeout: 120000 });

  after(async () => {
    for (const kf of Object.values(fronts)) kf.destroy();
    if (sd) await sd.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60000 });

  for (const [t, env] of Object.entries(TRANSPORTS)) {
    test(`kubectl exec over ${t}: ${KUBE_BLOB / MiB} MiB byte-exact, exit status`, async () => {
      const kc = (a) => fronts[t].kubectl(['-n', NS, 'exec', 'tlsk', '-c', 'c', '--', ...a], { env });
      let r = await kc(['sh', '-c', `yes ${LINE} | head -c ${KUBE_BLOB}`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.length, KUBE_BLOB);
      assert.equal(crypto.createHash('sha256').update(r.stdout).digest('hex'), yesSha(KUBE_BLOB));
      r = await kc(['sh', '-c', 'echo out; exit 3']);
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout.toString(), 'out\n');
    });

    test(`kubectl port-forward over ${t}: ${KUBE_BLOB / MiB} MiB byte-exact`, async () => {
      const p = fronts[t].spawnKubectl(['-n', NS, 'port-forward', '--address', '127.0.0.1',
        'pod/tlsk', `:${pfPort}`], { env });
      let stderr = '';
      p.stderr.on('data', (d) => { stderr += d; });
      try {
        const m = await waitOutput(p.stdout, /Forwarding from 127\.0\.0\.1:(\d+) ->/);
        const r = await tcpHash(Number(m[1]));
        assert.equal(r.length, KUBE_BLOB);
        assert.equal(r.sha256, yesSha(KUBE_BLOB));
        assert.doesNotMatch(stderr, /error/i);
      } finally {
        p.kill('SIGTERM');
      }
    });
  }

  test('sluice-kube without the client certificate, or without the CA: kubectl exec fails, named', async () => {
    for (const [name, re] of [['nocert', /error|certificate|handshake/i],
      ['noca', /TLS handshake with the runtime failed: .*certificate/i]]) {
      const r = await fronts[name].kubectl(['-n', NS, 'exec', 'tlsk', '-c', 'c', '--', 'true']);
      assert.notEqual(r.code, 0, `${name}: ${r.stderr}`);
      assert.match(r.stderr, re, name);
      console.log(`# ${name}: ${r.stderr.trim().split('\n').pop()}`);
    }
  });

  for (const t of ['spdy', 'websocket']) {
    test(`crictl exec over ${t} (--tls-ca, client certificate): output and exit status`,
      { skip: crictlSkip }, () => {
        const ctr = spawnSync(CRICTL, ['--config', '/dev/null', '-r', sd.endpoint, 'ps', '-q',
          '--name', '^c$'], { encoding: 'utf8' }).stdout.trim();
        assert.match(ctr, /^[0-9a-f]{64}$/);
        const tls = ['--tls-ca', pki.ca, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey,
          '--tls-sni', '127.0.0.1'];
        const run = (cmd, extra = tls) => spawnSync(CRICTL, ['--config', '/dev/null', '-r',
          sd.endpoint, 'exec', '--transport', t, ...extra, ctr, 'sh', '-c', cmd],
        { timeout: 60000, maxBuffer: 2 * KUBE_BLOB });
        let r = run(`yes ${LINE} | head -c ${KUBE_BLOB}`);
        assert.equal(r.status, 0, r.stderr.toString());
        assert.equal(crypto.createHash('sha256').update(r.stdout).digest('hex'), yesSha(KUBE_BLOB));
        // crictl 1.32 exits 1 and names the command's status
        r = run('echo out; exit 3');
        assert.equal(r.status, 1, r.stderr.toString());
        assert.match(r.stderr.toString(), /command terminated with exit code 3/);
        assert.equal(r.stdout.toString(), 'out\n');
        // no TLS flags: crictl skips verifying the server (cri-tools
        // tlsConfigFromFlags) and presents no certificate: refused here
        r = run('echo never', []);
        assert.notEqual(r.status, 0);
        assert.equal(r.stdout.toString(), '');
        console.log(`# crictl ${t}, no TLS flags: ${r.stderr.toString().trim().split('\n').pop()}`);
      });
  }
});
