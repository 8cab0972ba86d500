// Streaming sessions live in the pod monitors, so they outlive sluiced.
// 256 MiB sha256-checked transfers (exec stdout, exec stdin, attach output,
// port-forward downloads; attach 64 MiB under ASan), each with independent
// clients on every transport (Node `ws` on WebSocket v5 and the legacy
// port-forward channels, the Go spdystream client on SPDY, the stock
// kubectl through sluice-kube on WebSocket and on SPDY), while sluiced is SIGKILLed mid-transfer and
// started again, then the same with an upgrade (SIGTERM, and a copy of the
// binaries at another path started). Each transfer is held (its client stops
// reading or writing) while sluiced is down, so the restart happens
// mid-transfer; after it: every byte, the exit status, the pod and container
// states true, and a new exec served at once. Also: an ExecSync cut by the
// kill does not leave its process blocked on a pipe, and a port-forward cut
// by a real failure (its monitor killed) resets sluicectl's local
// connection, and a port-forward to a listener that never accepts gives up
// after portforward-connect-timeout-ms without stalling the monitor's other
// sessions. Needs root, runc, busybox-static, CNI plugins, go, kubectl and
// python3 (the never-accepting listener).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureGoClient, goClientSkip } from './lib/goclient.mjs';
import { KubeFront, kubeSkipReason, waitOutput } from './lib/kubefront.mjs';
import { CH, V4, V5, SUCCESS_JSON, connect, failureJson, runSession, terminateAll } from './lib/session.mjs';
import { ctlBackground } from './lib/sluicectl.mjs';
import { SLUICED, SLUICE_MON, SluicedInstance, skipReason, sleep, wsUrl } from './lib/sluiced.mjs';

const skip = skipReason({ cni: true }) || goClientSkip() || kubeSkipReason();
const MiB = 1024 * 1024;
const BLOB = 256 * MiB;
const HOLD_AT = 64 * MiB; // the transfer is held and sluiced restarted here
// Attach output comes at the container's pace (see att below): 256 MiB in
// 2 MiB pieces 10 ms apart on the gcc build; under ASan (CI's second lane),
// where the monitor is several times slower, 64 MiB in 1 MiB pieces 20 ms
// apart (at 1 MiB per 5 ms an ASan monitor on the loaded machine let the
// SPDY attach client fall 4 MiB behind once, and it was cut). Held and
// restarted a quarter in. What is tested here is the restart, not the
// attach-backlog cut (interop/attach_backlog is): with the default 4 MiB a
// node WebSocket client on CI's loaded machine (the ASan build and the fuzz
// smoke beside this lane) once fell behind at this pace and was cut, so this
// sluiced allows ATT_BACKLOG.
const ASAN = /asan/.test(process.env.SLUICED || '');
const ATT_BLOB = (ASAN ? 64 : 256) * MiB;
const ATT_HOLD_AT = ATT_BLOB / 4;
const ATT_PIECE_MIB = ASAN ? 1 : 2;
const ATT_PAUSE_S = ASAN ? 0.02 : 0.01; // after each piece
const ATT_BACKLOG = 64 * MiB;
const HTTP_PORT = 8080;
const NS = 'sluice-test';
const TRANSFER_MS = 240000;
const PF_CONNECT_TIMEOUT_MS = 2000;

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');

// Counts and hashes a stream of chunks; calls hold() once holdAt is passed.
class Sink {
  constructor(onHold, holdAt = HOLD_AT) {
    this.h = crypto.createHash('sha256');
    this.n = 0;
    this.onHold = onHold;
    this.holdAt = holdAt;
    this.heldAt = null;
  }

  add(d) {
    this.h.update(d);
    this.n += d.length;
    if (this.heldAt === null && this.n >= this.holdAt) {
      this.heldAt = this.n;
      this.onHold();
    }
  }

  digest() {
    return this.h.digest('hex');
  }
}

// Writes buf to a writable in 1 MiB pieces with back-pressure; awaits
// hold() (sluiced's restart) once HOLD_AT bytes went out.
async function feed(write, waitRoom, buf, hold) {
  let held = false;
  for (let off = 0; off < buf.length; off += MiB) {
    if (!held && off >= HOLD_AT) {
      held = true;
      await hold(off);
    }
    if (!write(buf.subarray(off, Math.min(off + MiB, buf.length)))) await waitRoom();
  }
}

function child(cmd, args, env) {
  const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const r = { proc: p, err: '' };
  p.stderr.setEncoding('utf8');
  p.stderr.on('data', (d) => { r.err += d; });
  p.stdin.on('error', () => {});
  r.exit = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal })));
  return r;
}

// GET /blob through a forwarded local port, held at HOLD_AT.
function download(port, hold) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/blob', agent: false }, (res) => {
      const sink = new Sink(() => {
        res.pause();
        hold().then(() => res.resume(), reject);
      });
      res.on('data', (d) => sink.add(d));
      res.on('end', () => resolve({ status: res.statusCode, sink, complete: res.complete }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

describe('streaming sessions outlive sluiced: SIGKILL and upgrade mid-transfer', {
  skip, timeout: 40 * 60000,
}, () => {
  let sd;
  let pod;
  let src; // a 256 MiB /tmp/blob served by httpd on :8080; exec target
  let att; // cats its own ATT_BLOB /tmp/blob for each line on its stdin
  let srcSum;
  let attSum;
  let upload; // 256 MiB sent into exec stdin
  const fronts = {};
  const binaries = [SLUICED];
  const restarts = []; // {how, downMs, firstExecMs}

  before(async () => {
    sd = await SluicedInstance.start({ label: 'srst', args: ['--portforward-connect-timeout-ms',
      String(PF_CONNECT_TIMEOUT_MS), '--attach-backlog', String(ATT_BACKLOG)],
    cni: { bridge: 'slt-srst', subnet: '10.89.12.0/24' } });
    pod = await sd.runPod('data');
    const mk = (n) => `head -c ${n} /dev/urandom > /tmp/blob && sha256sum /tmp/blob > /tmp/sum && touch /tmp/ready`;
    src = await sd.runContainer(pod, 'src',
      { command: ['sh', '-c', `${mk(BLOB)}; exec httpd -f -p ${HTTP_PORT} -h /tmp`] });
    // Attach output is never held up by a client (the monitor cuts one that
    // falls behind), so the hold is at the source: after ATT_HOLD_AT the
    // container waits for /tmp/cont (made by the test once sluiced is back),
    // and it writes a piece at a time with a pause, a pace clients keep up
    // with.
    const piece = (from, to) => `i=${from}; while [ $i -lt ${to} ]; do ` +
      `dd if=/tmp/blob bs=1048576 skip=$i count=${ATT_PIECE_MIB} 2>/dev/null; ` +
      `i=$((i+${ATT_PIECE_MIB})); sleep ${ATT_PAUSE_S}; done`;
    att = await sd.runContainer(pod, 'att', { stdin: true,
      command: ['sh', '-c', `${mk(ATT_BLOB)}; while touch /tmp/idle && read l; do rm -f /tmp/idle; ` +
        `${piece(0, ATT_HOLD_AT / MiB)}; ` +
        'while [ ! -e /tmp/cont ]; do sleep 0.05; done; rm -f /tmp/cont; ' +
        `${piece(ATT_HOLD_AT / MiB, ATT_BLOB / MiB)}; done`] });
    const sumOf = async (id) => {
      for (let i = 0; i < 400; i++) {
        const r = await sd.execSync(id, ['cat', '/tmp/sum']);
        const m = /^([0-9a-f]{64}) /.exec(r.stdout.toString());
        if (m) return m[1];
        await sleep(100);
      }
      throw new Error(`${id}: no /tmp/sum`);
    };
    const t0 = Date.now();
    srcSum = await sumOf(src);
    attSum = await sumOf(att);
    console.log(`# the two blobs (${BLOB / MiB} and ${ATT_BLOB / MiB} MiB) made and summed in ${Date.now() - t0} ms`);
    upload = crypto.randomBytes(BLOB);
    fronts.websocket = await KubeFront.start({ endpoint: sd.endpoint });
    fronts.spdy = await KubeFront.start({ endpoint: sd.endpoint });
    // The upgrade's new binaries: sluiced and its monitor at another path.
    const dir = path.join(sd.root, 'upgrade');
    fs.mkdirSync(dir);
    fs.copyFileSync(SLUICED, path.join(dir, 'sluiced'));
    fs.copyFileSync(SLUICE_MON, path.join(dir, 'sluice-mon'));
    fs.chmodSync(path.join(dir, 'sluiced'), 0o755);
    fs.chmodSync(path.join(dir, 'sluice-mon'), 0o755);
    binaries.push(path.join(dir, 'sluiced'));
  }, { timeout: 300000 }); // 2 x 256 MiB from /dev/urandom, summed: minutes on a loaded machine

  after(async () => {
    terminateAll();
    for (const kf of Object.values(fronts)) kf.destroy();
    await sd?.destroy();
    if (restarts.length) {
      const by = (how) => restarts.filter((r) => r.how === how);
      for (const how of ['kill', 'upgrade']) {
        const r = by(how);
        if (!r.length) continue;
        const max = (k) => Math.max(...r.map((x) => x[k]));
        console.log(`# ${how}: ${r.length} restarts mid-transfer; sluiced down at most ` +
          `${max('downMs')} ms; first new exec at most ${max('firstExecMs')} ms after its banner`);
      }
    }
  });

  // Stops sluiced (SIGKILL, or SIGTERM and a swap of binaries), starts it
  // again, and checks what it reports and that it serves a new exec at once.
  async function restart(how) {
    const t0 = Date.now();
    if (how === 'kill') {
      await sd.kill();
    } else {
      const problems = await sd.proc.terminate();
      assert.deepEqual(problems, [], 'the old sluiced stops clean');
      sd.cri?.close();
      sd.cri = null;
      sd.binary = binaries[(binaries.indexOf(sd.binary || SLUICED) + 1) % binaries.length];
    }
    await sd.launch();
    const t1 = Date.now();
    const s = await runSession(wsUrl(await sd.execUrl(src, ['echo', 'fresh'])), { protocols: [V5] });
    const firstExecMs = Date.now() - t1;
    assert.equal(s.text(CH.STDOUT), 'fresh\n');
    const pods = (await sd.rt.ListPodSandbox({})).items.filter((p) => p.id === pod.id);
    assert.equal(pods[0]?.state, 'SANDBOX_READY');
    const ctrs = (await sd.rt.ListContainers({ filter: { pod_sandbox_id: pod.id } })).containers;
    assert.deepEqual(ctrs.map((c) => c.state).sort(), ['CONTAINER_RUNNING', 'CONTAINER_RUNNING']);
    restarts.push({ how, downMs: t1 - t0, firstExecMs });
  }

  const kubectl = (t, args) => child('kubectl', ['--cache-dir', fronts[t].cacheDir, ...args],
    fronts[t].env(t === 'spdy' ? {
      KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false',
    } : {}));
  const spdyclient = (args) => child(ensureGoClient().path, args);

  // ---- exec stdout: cat /tmp/blob; exit 7 ----

  const EXEC_OUT = ['sh', '-c', 'cat /tmp/blob; exit 7'];

  async function execOutChild(how, start) {
    const c = await start();
    const sink = new Sink(() => {
      c.proc.stdout.pause();
      restart(how).then(() => c.proc.stdout.resume(), (e) => { c.failed = e; c.proc.stdout.resume(); });
    });
    c.proc.stdout.on('data', (d) => sink.add(d));
    c.proc.stdin.end();
    const exit = await c.exit;
    if (c.failed) throw c.failed;
    return { exit, sink, err: c.err };
  }

  const execOut = {
    'WebSocket v5 (ws)': async (how) => {
      let s;
      const sink = new Sink(() => {
        s.ws.pause();
        restart(how).then(() => s.ws.resume(), (e) => { s.failed = e; s.ws.resume(); });
      });
      s = await connect(wsUrl(await sd.execUrl(src, EXEC_OUT)), { protocols: [V5],
        keep: (ch) => ch !== CH.STDOUT, sink: (ch, d) => { if (ch === CH.STDOUT) sink.add(d); } });
      await s.waitClosed(TRANSFER_MS);
      if (s.failed) throw s.failed;
      assert.equal(s.text(CH.ERROR), failureJson(7));
      return sink;
    },
    'SPDY (spdystream)': async (how) => {
      const r = await execOutChild(how, async () =>
        spdyclient(['exec', await sd.execUrl(src, EXEC_OUT)]));
      assert.equal(r.exit.code, 7, r.err);
      return r.sink;
    },
    'kubectl WebSocket': async (how) => {
      const r = await execOutChild(how, async () =>
        kubectl('websocket', ['-n', NS, 'exec', 'data', '-c', 'src', '--', ...EXEC_OUT]));
      assert.equal(r.exit.code, 7, r.err);
      return r.sink;
    },
    'kubectl SPDY': async (how) => {
      const r = await execOutChild(how, async () =>
        kubectl('spdy', ['-n', NS, 'exec', 'data', '-c', 'src', '--', ...EXEC_OUT]));
      assert.equal(r.exit.code, 7, r.err);
      return r.sink;
    },
  };

  // ---- exec stdin: sha256sum of what we send; exit 5 ----

  const EXEC_IN = ['sh', '-c', 'sha256sum; exit 5'];

  async function execInChild(how, c) {
    const out = [];
    c.proc.stdout.on('data', (d) => out.push(d));
    const w = c.proc.stdin;
    await feed((b) => w.write(b), () => new Promise((resolve) => w.once('drain', resolve)), upload,
      () => restart(how));
    w.end();
    const exit = await c.exit;
    return { exit, text: Buffer.concat(out).toString(), err: c.err };
  }

  const execIn = {
    'WebSocket v5 (ws)': async (how) => {
      const s = await connect(wsUrl(await sd.execUrl(src, EXEC_IN, { stdin: true })),
        { protocols: [V5] });
      const room = async () => {
        while (s.ws.bufferedAmount > 8 * MiB) await sleep(5);
      };
      await feed((b) => { s.send(CH.STDIN, b); return s.ws.bufferedAmount <= 8 * MiB; }, room,
        upload, () => restart(how));
      s.sendClose(CH.STDIN);
      await s.waitClosed(TRANSFER_MS);
      assert.equal(s.text(CH.ERROR), failureJson(5));
      return s.text(CH.STDOUT);
    },
    'SPDY (spdystream)': async (how) => {
      const r = await execInChild(how,
        spdyclient(['exec', '-i', await sd.execUrl(src, EXEC_IN, { stdin: true })]));
      assert.equal(r.exit.code, 5, r.err);
      return r.text;
    },
    'kubectl WebSocket': async (how) => {
      const r = await execInChild(how,
        kubectl('websocket', ['-n', NS, 'exec', '-i', 'data', '-c', 'src', '--', ...EXEC_IN]));
      assert.equal(r.exit.code, 5, r.err);
      return r.text;
    },
    'kubectl SPDY': async (how) => {
      const r = await execInChild(how,
        kubectl('spdy', ['-n', NS, 'exec', '-i', 'data', '-c', 'src', '--', ...EXEC_IN]));
      assert.equal(r.exit.code, 5, r.err);
      return r.text;
    },
  };

  // ---- attach: a line on stdin makes the container cat its blob ----

  // Each attach test starts with the container idle at its `read`: after a
  // failed test its round may still be writing (the next client would get the
  // rest of it too) or waiting at the hold, which is let go here.
  async function attachIdle() {
    for (let i = 0; i < 600; i++) {
      if ((await sd.execSync(att, ['test', '-e', '/tmp/idle'])).exit_code === 0) {
        if (i > 0) await sleep(500); // the monitor drains what the round left in the pipe
        return;
      }
      if (i === 20) await sd.execSync(att, ['touch', '/tmp/cont']);
      await sleep(100);
    }
    throw new Error('the attach container did not come back to its read');
  }

  // The container holds at ATT_HOLD_AT until /tmp/cont exists.
  const attachHold = async (how) => {
    await restart(how);
    await sd.execSync(att, ['touch', '/tmp/cont']);
  };

  async function attachChild(how, mk) {
    await attachIdle();
    const c = await mk();
    const sink = new Sink(() => {
      attachHold(how).catch((e) => { c.failed = e; c.proc.kill('SIGKILL'); });
    }, ATT_HOLD_AT);
    const full = new Promise((resolve) => c.proc.stdout.on('data', (d) => {
      sink.add(d);
      if (sink.n >= ATT_BLOB) resolve();
    }));
    c.proc.stdin.write('go\n');
    await Promise.race([full, c.exit]);
    c.proc.stdin.end(); // the client detaches: the session ends
    const exit = await c.exit;
    if (c.failed) throw c.failed;
    assert.equal(exit.code, 0, c.err);
    return sink;
  }

  const attach = {
    'WebSocket v5 (ws)': async (how) => {
      await attachIdle();
      let s;
      const sink = new Sink(() => {
        attachHold(how).catch((e) => { s.failed = e; s.poke(); });
      }, ATT_HOLD_AT);
      s = await connect(wsUrl(await sd.attachUrl(att, { stdin: true })), { protocols: [V5],
        keep: (ch) => ch !== CH.STDOUT, sink: (ch, d) => { if (ch === CH.STDOUT) sink.add(d); } });
      s.send(CH.STDIN, 'go\n');
      await s.waitFor(() => sink.n >= ATT_BLOB || s.failed, 'the whole blob', TRANSFER_MS);
      if (s.failed) throw s.failed;
      s.sendClose(CH.STDIN);
      await s.waitClosed(TRANSFER_MS);
      assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
      return sink;
    },
    'SPDY (spdystream)': async (how) => attachChild(how, async () =>
      spdyclient(['attach', '-i', await sd.attachUrl(att, { stdin: true })])),
    'kubectl WebSocket': async (how) => attachChild(how, async () =>
      kubectl('websocket', ['-n', NS, 'attach', '-i', 'data', '-c', 'att'])),
    'kubectl SPDY': async (how) => attachChild(how, async () =>
      kubectl('spdy', ['-n', NS, 'attach', '-i', 'data', '-c', 'att'])),
  };

  // ---- port-forward: GET /blob from httpd in the pod's network ----

  async function forwarderDownload(how, c) {
    try {
      const m = await waitOutput(c.proc.stdout, /Forwarding from 127\.0\.0\.1:(\d+) ->/);
      const r = await download(Number(m[1]), () => restart(how));
      assert.equal(r.status, 200);
      assert.ok(r.complete, 'the response ended complete');
      return r.sink;
    } finally {
      c.proc.kill('SIGTERM');
      await c.exit;
    }
  }

  const portForward = {
    'WebSocket legacy channels (ws)': async (how) => {
      let s;
      let body = null; // after the HTTP head
      let head = Buffer.alloc(0);
      const sink = new Sink(() => {
        s.ws.pause();
        restart(how).then(() => s.ws.resume(), (e) => { s.failed = e; s.ws.resume(); });
      });
      let prefix = 2; // the port prefix on the data channel
      s = await connect(wsUrl(await sd.portForwardUrl(pod.id, [HTTP_PORT])), { protocols: [V4],
        keep: (ch) => ch !== 0,
        sink: (ch, d) => {
          if (ch !== 0) return;
          const skipN = Math.min(prefix, d.length);
          prefix -= skipN;
          d = d.subarray(skipN);
          if (body === null) {
            head = Buffer.concat([head, d]);
            const i = head.indexOf('\r\n\r\n');
            if (i < 0) return;
            body = head.subarray(0, i).toString();
            d = head.subarray(i + 4);
          }
          if (d.length) sink.add(d);
        } });
      s.send(0, `GET /blob HTTP/1.0\r\nHost: x\r\n\r\n`);
      await s.waitFor(() => sink.n >= BLOB || s.failed, 'the whole blob', TRANSFER_MS);
      if (s.failed) throw s.failed;
      assert.match(body, /^HTTP\/1\.[01] 200/);
      s.ws.close(1000);
      await s.waitClosed();
      return sink;
    },
    'SPDY (spdystream)': async (how) => forwarderDownload(how,
      spdyclient(['pf-listen', await sd.portForwardUrl(pod.id), `0:${HTTP_PORT}`])),
    'kubectl WebSocket': async (how) => forwarderDownload(how, kubectl('websocket',
      ['-n', NS, 'port-forward', '--address', '127.0.0.1', 'pod/data', `:${HTTP_PORT}`])),
    'kubectl SPDY': async (how) => forwarderDownload(how, kubectl('spdy',
      ['-n', NS, 'port-forward', '--address', '127.0.0.1', 'pod/data', `:${HTTP_PORT}`])),
  };

  for (const how of ['kill', 'upgrade']) {
    const what = how === 'kill' ? 'SIGKILL of sluiced' : 'upgrade (SIGTERM, new binary)';
    for (const [client, run] of Object.entries(execOut)) {
      test(`${what}: exec stdout, ${client}: 256 MiB and exit 7`, { timeout: TRANSFER_MS }, async () => {
        const sink = await run(how);
        assert.ok(sink.heldAt > 0 && sink.heldAt < BLOB, `held mid-transfer (${sink.heldAt})`);
        assert.equal(sink.n, BLOB);
        assert.equal(sink.digest(), srcSum);
      });
    }
    for (const [client, run] of Object.entries(execIn)) {
      test(`${what}: exec stdin, ${client}: 256 MiB into sha256sum, exit 5`, { timeout: TRANSFER_MS },
        async () => {
          const text = await run(how);
          assert.equal(text.split(' ')[0], sha256(upload));
        });
    }
    for (const [client, run] of Object.entries(attach)) {
      test(`${what}: attach, ${client}: ${ATT_BLOB / MiB} MiB of container output`, { timeout: TRANSFER_MS },
        async () => {
          const sink = await run(how);
          assert.ok(sink.heldAt > 0 && sink.heldAt < ATT_BLOB, `held mid-transfer (${sink.heldAt})`);
          assert.equal(sink.n, ATT_BLOB);
          assert.equal(sink.digest(), attSum);
        });
    }
    for (const [client, run] of Object.entries(portForward)) {
      test(`${what}: port-forward, ${client}: 256 MiB download`, { timeout: TRANSFER_MS },
        async () => {
          const sink = await run(how);
          assert.ok(sink.heldAt > 0 && sink.heldAt < BLOB, `held mid-transfer (${sink.heldAt})`);
          assert.equal(sink.n, BLOB);
          assert.equal(sink.digest(), srcSum);
        });
    }
  }

  test('an ExecSync cut by the kill does not leave its process blocked on a full pipe', async () => {
    const call = sd.execSync(src, ['sh', '-c', 'echo $$ > /tmp/es.pid; exec yes'], 0, 60000)
      .catch(() => null);
    let pid = '';
    for (let i = 0; i < 100 && !/^\d+$/.test(pid); i++) {
      await sleep(50);
      pid = (await sd.execSync(src, ['cat', '/tmp/es.pid'])).stdout.toString().trim();
    }
    assert.match(pid, /^\d+$/);
    await sd.kill();
    await call;
    await sd.launch();
    let state = '';
    for (let i = 0; i < 60 && state !== 'gone'; i++) {
      await sleep(100);
      state = (await sd.execSync(src, ['sh', '-c', `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`]))
        .stdout.toString().trim();
    }
    assert.equal(state, 'gone', `yes (pid ${pid}) still runs`);
  });

  const noPython = spawnSync('python3', ['-c', '0']).status !== 0 ? 'python3 is not installed' : false;
  test('a pod port whose listener never accepts: the connect gives up after ' +
    'portforward-connect-timeout-ms, and the monitor\'s other sessions go on meanwhile',
  { skip: noPython }, async () => {
    // A host-network pod: its monitor connects in the host's network, where
    // this listener (backlog 0, never accepting) has a full queue.
    const hpod = await sd.runPod('hostnet', { hostNetwork: true });
    const ctr = await sd.runContainer(hpod, 'c', { command: ['sleep', '100000'] });
    const py = spawn('python3', ['-c', 'import socket,sys,time\n' +
      's=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(0)\n' +
      'print(s.getsockname()[1], flush=True)\ntime.sleep(600)\n'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const fillers = [];
    try {
      const port = Number((await waitOutput(py.stdout, /^(\d+)\n/m))[1]);
      // Fill its queue: connects that complete, until one does not.
      for (let i = 0; i < 8; i++) {
        const c = new net.Socket();
        fillers.push(c);
        c.on('error', () => {});
        const ok = await new Promise((resolve) => {
          const t = setTimeout(() => resolve(false), 300);
          c.connect(port, '127.0.0.1', () => { clearTimeout(t); resolve(true); });
        });
        if (!ok) break;
      }
      // Another session of the same monitor ticks meanwhile.
      const ticks = [];
      const ticker = await connect(wsUrl(await sd.execUrl(ctr, ['sh', '-c',
        'i=0; while [ $i -lt 40 ]; do echo $i; i=$((i+1)); sleep 0.1; done'])), {
        protocols: [V5], sink: (ch) => { if (ch === CH.STDOUT) ticks.push(Date.now()); } });
      const t0 = Date.now();
      const s = await connect(wsUrl(await sd.portForwardUrl(hpod.id, [port])), { protocols: [V4] });
      await s.waitFor((x) => x.channel(1).length > 2, 'the error text', 10000);
      const took = Date.now() - t0;
      const err = s.channel(1).subarray(2).toString();
      assert.match(err, new RegExp(`failed to connect to localhost:${port}: no answer within ` +
        `${PF_CONNECT_TIMEOUT_MS} ms`));
      assert.ok(took >= PF_CONNECT_TIMEOUT_MS - 100 && took < PF_CONNECT_TIMEOUT_MS + 1500,
        `gave up after ${took} ms`);
      s.ws.close(1000);
      await ticker.waitClosed(10000);
      const during = ticks.filter((t) => t >= t0 && t <= t0 + took);
      const gaps = during.slice(1).map((t, i) => t - during[i]);
      assert.ok(during.length >= 10, `${during.length} ticks while connecting`);
      assert.ok(Math.max(...gaps) < 500, `a gap of ${Math.max(...gaps)} ms in the other session`);
    } finally {
      for (const c of fillers) c.destroy();
      py.kill('SIGKILL');
    }
  });

  test('no sanitizer report from sluiced or the monitors so far', () => {
    assert.deepEqual(sd.sanitizerReports(), []);
  });

  for (const t of ['spdy', 'websocket', 'legacy']) {
    test(`a port-forward cut by a real failure (its monitor killed) resets sluicectl's local ` +
      `connection instead of ending it (${t})`, { timeout: 120000 }, async () => {
      const victim = await sd.runPod(`victim-${t}`);
      const ctr = await sd.runContainer(victim, 'v', { command: ['sh', '-c',
        `head -c ${BLOB} /dev/zero > /tmp/blob && touch /tmp/ready; ` +
        `exec httpd -f -p ${HTTP_PORT} -h /tmp`] });
      for (let i = 0; i < 200; i++) {
        if ((await sd.execSync(ctr, ['test', '-f', '/tmp/ready'])).exit_code === 0) break;
        await sleep(100);
      }
      const pf = await ctlBackground(['-r', sd.endpoint, 'port-forward', '-r', t, '--address',
        '127.0.0.1', victim.id, `:${HTTP_PORT}`], { ready: /Forwarding from 127\.0\.0\.1:\d+ ->/ });
      try {
        const port = Number(/127\.0\.0\.1:(\d+) ->/.exec(pf.out())[1]);
        const monPid = Number(fs.readFileSync(path.join(sd.runDir, 'pods', victim.id, 'mon.pid'),
          'utf8'));
        let n = 0;
        const end = await new Promise((resolve) => {
          const req = http.get({ host: '127.0.0.1', port, path: '/blob', agent: false }, (res) => {
            let killed = false;
            res.on('data', (d) => {
              n += d.length;
              if (!killed && n >= 8 * MiB) {
                killed = true;
                process.kill(monPid, 'SIGKILL');
              }
            });
            res.on('end', () => resolve({ how: 'end', n, complete: res.complete }));
            res.on('error', (e) => resolve({ how: 'error', n, code: e.code }));
            res.on('aborted', () => resolve({ how: 'aborted', n }));
          });
          req.on('error', (e) => resolve({ how: 'error', n, code: e.code }));
        });
        assert.ok(end.n < BLOB, `the download was cut (${end.n} bytes)`);
        assert.notEqual(end.how, 'end', `a cut download must not end cleanly: ${JSON.stringify(end)}`);
      } finally {
        await pf.stop('SIGINT');
      }
    });
  }
});
