// sluiced's streaming URLs (CRI Exec, Attach, PortForward) used by
// independent clients against real runc containers: the Go spdystream
// client (SPDY/3.1, channel v1-v4, portforward.k8s.io), the `ws` package
// (WebSocket v5, v4, v4.base64 channels and the legacy port-forward
// channels) and @kubernetes/client-node. Exit codes, stdout/stderr, stdin
// EOF, tty + resize seen by `stty size`, attach to `cat`, port-forward into
// a CNI pod, 64 MiB sha256-checked through exec, and attach fan-out with a
// stalled client. Needs root, runc, busybox-static, CNI plugins and go.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { EXIT, ensureGoClient, goClientSkip, pumpPattern, runGoClient } from './lib/goclient.mjs';
import { Collector, kubeExec } from './lib/kube.mjs';
import { CH, V4, V4B64, V5, connect, failureJson, runSession, SUCCESS_JSON,
  terminateAll } from './lib/session.mjs';
import { SluicedInstance, criLogLines, skipReason, sleep, waitLog, wsUrl } from './lib/sluiced.mjs';

const skip = skipReason({ cni: true }) || goClientSkip();
const MiB = 1024 * 1024;
const BIG = 64 * MiB;
const ECHO_PORT = 8080;
const CLOSED_PORT = 8081;
const FLOOD_LINES = 40000; // of 1000 bytes: ~40 MB, in bursts of 1000 lines
const FLOOD_LINE = 1000;

// Waits for pred() to hold (polling).
async function until(pred, what, ms = 15000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

async function withTimeout(promise, ms, what) {
  let timer;
  try {
    return await Promise.race([promise, new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${what} in ${ms} ms`)), ms);
    })]);
  } finally {
    clearTimeout(timer);
  }
}

// The Go client as a child we watch while it runs: stdout kept (or hashed).
function goChild(args, { input } = {}) {
  const proc = spawn(ensureGoClient().path, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const r = { proc, out: [], outLen: 0, err: '', exit: null };
  proc.stdout.on('data', (d) => {
    r.out.push(d);
    r.outLen += d.length;
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => { r.err += d; });
  proc.stdin.on('error', () => {});
  if (input !== undefined) proc.stdin.end(input);
  r.done = new Promise((resolve) => proc.on('close', (code, signal) => {
    r.exit = { code, signal };
    resolve(r.exit);
  }));
  r.text = () => Buffer.concat(r.out).toString('utf8');
  return r;
}

// A shell loop that prints `stty size` until it is "rows cols".
const sttyUntil = (rows, cols) => ['sh', '-c',
  `i=0; while [ $i -lt 100 ]; do s=$(stty size 2>/dev/null); [ "$s" = "${rows} ${cols}" ] && break; ` +
  'i=$((i+1)); sleep 0.05; done; echo "size=$s"'];

describe('sluiced streaming with independent clients', { skip }, () => {
  let sd;
  let hostPod;
  let cniPod;
  let shell; // sleep 100000: exec target
  let catCtr; // cat with stdin: attach target
  let ttyCtr; // sh on a terminal: tty attach target
  const kids = new Set();

  let startError = null;
  // A failing before() would only cancel the tests (not counted as failed):
  // the daemon starts here, the pods in the first test.
  before(async () => {
    sd = await SluicedInstance.start({ label: 'strm',
      cni: { bridge: 'slt-strm', subnet: '10.89.2.0/24' } }).catch((e) => {
      startError = e;
      return null;
    });
  });

  test('setup: a host-network pod (shell, cat, tty sh), a CNI pod with nc -ll -e cat', async () => {
    if (startError) throw startError;
    hostPod = await sd.runPod('streams', { hostNetwork: true });
    cniPod = await sd.runPod('netpod');
    shell = await sd.runContainer(hostPod, 'shell', { command: ['sleep', '100000'] });
    catCtr = await sd.runContainer(hostPod, 'cat', { command: ['cat'], stdin: true });
    ttyCtr = await sd.runContainer(hostPod, 'term', { command: ['sh'], stdin: true, tty: true });
    await sd.runContainer(cniPod, 'echo', {
      command: ['nc', '-ll', '-p', String(ECHO_PORT), '-e', 'cat'],
    });
    // wait until nc listens
    const echoCtr = (await sd.rt.ListContainers({ filter: { pod_sandbox_id: cniPod.id } }))
      .containers[0].id;
    await until(async () => (await sd.execSync(echoCtr, ['netstat', '-ltn'])).stdout.toString()
      .includes(`:${ECHO_PORT}`), 'nc listening');
  });

  after(async () => {
    for (const k of kids) k.kill('SIGKILL');
    terminateAll();
    await sd?.destroy();
  });

  // ---- exec over SPDY (Go client) ----

  test('SPDY exec: stdout, stderr, exit code (v4 negotiated from v5..v1)', async () => {
    for (const code of [0, 3, 255]) {
      const url = await sd.execUrl(shell, ['sh', '-c', `echo out; echo err >&2; exit ${code}`]);
      const r = await runGoClient(['exec', url]);
      assert.equal(r.code, code, r.stderr);
      assert.equal(r.stdout.toString(), 'out\n');
      assert.match(r.stderr, /^err\n/);
    }
  });

  for (const proto of ['v3.channel.k8s.io', 'v2.channel.k8s.io']) {
    test(`SPDY exec with only ${proto}: output, and a failure text for exit 5`, async () => {
      const ok = await runGoClient(['exec', '-protocols', proto,
        await sd.execUrl(shell, ['echo', 'hi'])]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout.toString(), 'hi\n');
      const bad = await runGoClient(['exec', '-protocols', proto,
        await sd.execUrl(shell, ['sh', '-c', 'exit 5'])]);
      assert.equal(bad.code, EXIT.REMOTE, bad.stderr);
      assert.match(bad.stderr, /non-zero exit code: exit status 5/);
    });
  }

  test('SPDY exec with only channel.k8s.io: output; no exit status (the v1 quirk)', async () => {
    const ok = await runGoClient(['exec', '-protocols', 'channel.k8s.io',
      await sd.execUrl(shell, ['sh', '-c', 'echo hi; echo e >&2; exit 5'])]);
    // The kubelet library resets the v1 error stream before the command
    // runs, so a v1 client never learns the exit code.
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.toString(), 'hi\n');
    assert.equal(ok.stderr, 'e\n');
  });

  test('SPDY exec: stdin EOF (FIN) ends cat', async () => {
    const url = await sd.execUrl(shell, ['cat'], { stdin: true });
    const r = await runGoClient(['exec', '-i', url], { input: 'hello\nworld\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), 'hello\nworld\n');
  });

  test('SPDY exec: tty, resizes seen by stty size', async () => {
    const url = await sd.execUrl(shell, sttyUntil(40, 120), { tty: true, stdin: true });
    const r = await runGoClient(['exec', '-t', '-i', '-resize', '100x30,120x40', url],
      { input: (w) => setTimeout(() => w.end(), 8000) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), 'size=40 120\r\n');
  });

  test('SPDY exec: 64 MiB through cat, sha256 checked', { timeout: 120000 }, async () => {
    const url = await sd.execUrl(shell, ['cat'], { stdin: true, stderr: false });
    let sent;
    const r = await runGoClient(['exec', '-i', '-stderr=false', url], {
      hashStdout: true,
      timeoutMs: 110000,
      input: (w) => {
        pumpPattern(w, BIG).then((s) => { sent = s; }, () => {});
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdoutBytes, BIG);
    assert.equal(r.stdoutSha256, sent.sha256);
  });

  // ---- exec over WebSocket (ws) ----

  test('WebSocket v5 exec: stdout, stderr, status with the exit code', async () => {
    for (const code of [0, 3]) {
      const url = await sd.execUrl(shell, ['sh', '-c', `echo out; echo err >&2; exit ${code}`]);
      const s = await runSession(wsUrl(url), { protocols: [V5] });
      assert.equal(s.protocol, V5);
      assert.equal(s.text(CH.STDOUT), 'out\n');
      assert.equal(s.text(CH.STDERR), 'err\n');
      assert.equal(s.text(CH.ERROR), code ? failureJson(code) : SUCCESS_JSON);
      assert.equal(s.closeInfo.code, 1000);
    }
  });

  test('WebSocket v5 exec: stdin CLOSE signal ends cat', async () => {
    const url = await sd.execUrl(shell, ['cat'], { stdin: true });
    const s = await runSession(wsUrl(url), { protocols: [V5] }, async (ss) => {
      ss.send(CH.STDIN, 'one\n');
      await ss.waitFor((x) => x.text(CH.STDOUT) === 'one\n', 'the echo');
      ss.send(CH.STDIN, 'two\n');
      ss.sendClose(CH.STDIN);
    });
    assert.equal(s.text(CH.STDOUT), 'one\ntwo\n');
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  test('WebSocket v5 exec: tty and resize seen by stty size', async () => {
    const url = await sd.execUrl(shell, sttyUntil(33, 111), { tty: true, stdin: true });
    const s = await runSession(wsUrl(url), { protocols: [V5] }, async (ss) => {
      ss.resize(80, 24);
      ss.resize(111, 33);
    });
    assert.equal(s.text(CH.STDOUT), 'size=33 111\r\n');
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  for (const proto of [V4, V4B64]) {
    test(`WebSocket ${proto} exec: stdin, stdout, stderr, exit status`, async () => {
      const url = await sd.execUrl(shell,
        ['sh', '-c', 'head -c 5; echo; echo to-err >&2; exit 9'], { stdin: true });
      const s = await runSession(wsUrl(url), { protocols: [proto] }, async (ss) => {
        ss.send(CH.STDIN, 'hello, more than five');
      });
      assert.equal(s.protocol, proto);
      assert.equal(s.text(CH.STDOUT), 'hello\n');
      assert.equal(s.text(CH.STDERR), 'to-err\n');
      assert.equal(s.text(CH.ERROR), failureJson(9));
    });
  }

  test('WebSocket v5 exec: 64 MiB through cat, sha256 checked', { timeout: 120000 }, async () => {
    const url = await sd.execUrl(shell, ['cat'], { stdin: true });
    const got = createHash('sha256');
    let n = 0;
    const s = await connect(wsUrl(url), { protocols: [V5], keep: (ch) => ch !== CH.STDOUT,
      sink: (ch, d) => {
        if (ch === CH.STDOUT) {
          got.update(d);
          n += d.length;
        }
      } });
    const sent = createHash('sha256');
    const chunk = Buffer.alloc(256 * 1024);
    for (let off = 0; off < BIG; off += chunk.length) {
      chunk.fill(off / chunk.length % 251);
      chunk.writeUInt32BE(off, 0);
      sent.update(chunk);
      s.send(CH.STDIN, chunk);
      while (s.ws.bufferedAmount > 4 * MiB) await sleep(2);
    }
    s.sendClose(CH.STDIN);
    await s.waitClosed(110000);
    assert.equal(n, BIG);
    assert.equal(got.digest('hex'), sent.digest('hex'));
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  test('client-node Exec: tty with the terminal size of its stdout', async () => {
    const url = await sd.execUrl(shell, sttyUntil(43, 132), { tty: true, stdin: true });
    const stdout = new Collector();
    stdout.columns = 132;
    stdout.rows = 43;
    const stdin = new PassThrough();
    const r = await kubeExec(wsUrl(url), { stdout, stdin, tty: true,
      onOpen: async () => setTimeout(() => stdin.end(), 8000) });
    assert.equal(stdout.text(), 'size=43 132\r\n');
    assert.equal(r.status?.status, 'Success', JSON.stringify(r.statuses));
  });

  // ---- attach ----

  test('attach to cat over WebSocket v5: stdin in, stdout out, also in the log', async () => {
    const url = await sd.attachUrl(catCtr, { stdin: true });
    const s = await connect(wsUrl(url), { protocols: [V5] });
    s.send(CH.STDIN, 'ping over ws\n');
    await s.waitFor((x) => x.text(CH.STDOUT) === 'ping over ws\n', 'the echo');
    s.ws.close(1000);
    await s.waitClosed();
    await waitLog(sd.logPath(hostPod, 'cat'),
      (r) => criLogLines(r, 'stdout').includes('ping over ws'), 'the log line');
    assert.equal((await sd.status(catCtr)).state, 'CONTAINER_RUNNING');
  });

  test('attach to cat over SPDY (Go client), after the WebSocket one left', async () => {
    const url = await sd.attachUrl(catCtr, { stdin: true });
    const c = goChild(['attach', '-i', url]);
    kids.add(c.proc);
    c.proc.stdin.write('ping over spdy\n');
    await until(() => c.text() === 'ping over spdy\n', `the echo; got ${JSON.stringify(c.text())}`);
    c.proc.kill('SIGTERM');
    await c.done;
    kids.delete(c.proc);
    await waitLog(sd.logPath(hostPod, 'cat'),
      (r) => criLogLines(r, 'stdout').includes('ping over spdy'), 'the log line');
  });

  test('attach to a tty sh over WebSocket v5: resize seen by stty size', async () => {
    const url = await sd.attachUrl(ttyCtr, { tty: true, stdin: true });
    const s = await connect(wsUrl(url), { protocols: [V5] });
    s.resize(91, 27);
    await sleep(200);
    s.send(CH.STDIN, 'stty size\n');
    await s.waitFor((x) => /27 91\r\n/.test(x.text(CH.STDOUT)), 'stty size output');
    s.ws.close(1000);
    await s.waitClosed();
  });

  // ---- port-forward into the CNI pod ----

  test('SPDY port-forward into a CNI pod: nc -e cat echoes', async () => {
    const url = await sd.portForwardUrl(cniPod.id);
    const r = await runGoClient(['pf', url, String(ECHO_PORT)], { input: 'hello pf\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), 'hello pf\n');
  });

  test('SPDY port-forward: 4 MiB round trip, sha256 checked', { timeout: 60000 }, async () => {
    const url = await sd.portForwardUrl(cniPod.id);
    let sent;
    const r = await runGoClient(['pf', url, String(ECHO_PORT)], { hashStdout: true,
      input: (w) => { pumpPattern(w, 4 * MiB).then((x) => { sent = x; }, () => {}); } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdoutBytes, 4 * MiB);
    assert.equal(r.stdoutSha256, sent.sha256);
  });

  test('SPDY port-forward to a closed port: an error, exit 1', async () => {
    const url = await sd.portForwardUrl(cniPod.id);
    const r = await runGoClient(['pf', url, String(CLOSED_PORT)], { input: 'x' });
    assert.equal(r.code, EXIT.REMOTE, r.stderr);
    assert.match(r.stderr, new RegExp(String(CLOSED_PORT)));
  });

  for (const proto of [V4, V4B64]) {
    test(`WebSocket ${proto} port-forward (legacy channels) into the CNI pod`, async () => {
      const url = await sd.portForwardUrl(cniPod.id, [ECHO_PORT]);
      const s = await connect(wsUrl(url), { protocols: [proto] });
      const prefix = Buffer.from([ECHO_PORT & 0xff, ECHO_PORT >> 8]);
      await s.waitFor((x) => x.channel(0).length >= 2 && x.channel(1).length >= 2,
        'the port prefixes');
      assert.deepEqual(s.channel(0).subarray(0, 2), prefix);
      assert.deepEqual(s.channel(1), prefix);
      s.send(0, 'hello legacy\n');
      await s.waitFor((x) => x.channel(0).subarray(2).toString() === 'hello legacy\n', 'the echo');
      s.ws.close(1000);
      await s.waitClosed();
    });
  }

  // ---- attach fan-out ----

  test('attach fan-out: a stalled client is cut, the other and the log get every line',
    { timeout: 120000 }, async () => {
      // FLOOD_CHUNKS bursts of 1000 lines (1 MB) 0.1 s apart: ~10 MB/s, which
      // a reading client keeps up with, while a stalled one falls more than
      // the monitor's 4 MiB backlog behind (its bursts are below that).
      const awk = `BEGIN{p=sprintf("%${FLOOD_LINE - 10}s",""); gsub(/ /,"x",p); ` +
        'for(i=k*1000+1;i<=(k+1)*1000;i++) printf "%08d %s\\n", i, p}';
      const flood = await sd.runContainer(hostPod, 'flood', {
        command: ['sh', '-c', 'i=0; while [ ! -e /tmp/go ]; do echo "wait $i"; i=$((i+1)); ' +
          `sleep 0.1; done; k=0; while [ $k -lt ${FLOOD_LINES / 1000} ]; do ` +
          `awk -v k=$k '${awk}'; k=$((k+1)); sleep 0.1; done; sleep 1; exit 0`],
      });
      // The stalled one: WebSocket, paused once attached.
      const stalled = await connect(wsUrl(await sd.attachUrl(flood)), { protocols: [V5] });
      await stalled.waitFor((x) => x.text(CH.STDOUT).includes('wait'), 'a line on the stalled one');
      stalled.ws.pause();
      // The reader: the Go client over SPDY.
      const reader = goChild(['attach', await sd.attachUrl(flood)]);
      kids.add(reader.proc);
      await until(() => reader.text().includes('wait'), 'a line on the reader');
      await sd.execSync(flood, ['touch', '/tmp/go']);
      const exit = await withTimeout(reader.done, 100000, 'the reader\'s exit');
      kids.delete(reader.proc);
      assert.deepEqual(exit, { code: 0, signal: null }, reader.err);
      const want = (i) => `${String(i).padStart(8, '0')} ${'x'.repeat(FLOOD_LINE - 10)}`;
      const check = (lines, who) => {
        const got = lines.filter((l) => !l.startsWith('wait '));
        assert.equal(got.length, FLOOD_LINES, `${who}: ${got.length} lines`);
        got.forEach((l, i) => {
          if (l !== want(i + 1)) assert.fail(`${who}: line ${i + 1} is ${JSON.stringify(l.slice(0, 40))}`);
        });
      };
      check(reader.text().split('\n').slice(0, -1), 'the reader');
      const recs = await waitLog(sd.logPath(hostPod, 'flood'),
        (r) => criLogLines(r, 'stdout').filter((l) => !l.startsWith('wait ')).length >= FLOOD_LINES,
        'every line in the log', 30000);
      check(criLogLines(recs, 'stdout'), 'the log');
      // The stalled one: resumed, it finds an error status and a close.
      stalled.ws.resume();
      await stalled.waitClosed(30000);
      const status = stalled.text(CH.ERROR);
      assert.match(status, /"status":"Failure"/, status);
      assert.match(status, /behind/, status);
      assert.ok(stalled.channel(CH.STDOUT).length < FLOOD_LINES * FLOOD_LINE,
        `the stalled client got all ${stalled.channel(CH.STDOUT).length} bytes`);
    });

  test('SIGTERM: exit 0, sanitizer-clean, nothing left behind', async () => {
    terminateAll();
    await sd.stop();
  });
});
