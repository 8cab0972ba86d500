// Streaming-session observability: the pod monitor reports each session it
// serves to sluiced, whose /metrics (read by the Prometheus project's own
// text parser, Debian's python3-prometheus-client) counts them by operation
// and transport, their ends by reason, their bytes by direction, the live
// ones (also across a SIGKILL of sluiced: the monitor's hello says what is
// live), tokens pending; and both logs (sluiced's and the monitor's
// mon.log) have every start and end at debug with its numbers. Real
// clients: Node `ws` (exec v5, legacy port-forward v4) and the Go
// spdystream client (exec over SPDY). Needs root, runc, busybox-static, go
// and python3-prometheus-client.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { goClientSkip, runGoClient } from './lib/goclient.mjs';
import { CH, V4, V5, connect, runSession, terminateAll } from './lib/session.mjs';
import { SluicedInstance, skipReason, sleep, wsUrl } from './lib/sluiced.mjs';

const PY = '/usr/bin/python3';
const PROM_PARSE = path.join(import.meta.dirname, 'py/prom_parse.py');
const promMissing = spawnSync(PY, ['-c', 'import prometheus_client.parser'], { stdio: 'ignore' })
  .status !== 0;
const skip = skipReason() || goClientSkip() ||
  (promMissing && 'python3-prometheus-client is not installed (scripts/deps installs it)');
const EXEC_BYTES = 200000;
const PF_BYTES = 300000;

function get(port, urlPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

// /metrics through prometheus_client.parser.
async function scrape(port) {
  const r = await get(port, '/metrics');
  assert.equal(r.status, 200, r.body);
  const p = spawnSync(PY, [PROM_PARSE], { input: r.body, encoding: 'utf8' });
  assert.equal(p.status, 0, `the parser refused /metrics: ${p.stderr}\n${r.body}`);
  return JSON.parse(p.stdout);
}

// The value of name{labels}; undefined when there is no such sample.
function value(m, name, labels = {}) {
  for (const f of m.families)
    for (const s of f.samples)
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        return s.value;
  return undefined;
}

const total = (op, tr) => ['sluice_stream_sessions_total', { operation: op, transport: tr }];
const active = (op, tr) => ['sluice_stream_sessions_active', { operation: op, transport: tr }];
const ends = (op, reason) => ['sluice_stream_session_ends_total', { operation: op, reason }];
const bytes = (direction) => ['sluice_stream_bytes_total', { direction }];

describe('streaming sessions in /metrics and in the logs', { skip, timeout: 240000 }, () => {
  let sd, pod, ctr, port;

  // The admin port of the running sluiced (its "sluiced ready" line).
  async function adminPort() {
    for (let i = 0; i < 250; i++) {
      const m = / admin=http:\/\/127\.0\.0\.1:(\d+)\//.exec(sd.proc.stderr);
      if (m) return Number(m[1]);
      await sleep(20);
    }
    throw new Error(`no admin address logged: ${sd.describe()}`);
  }

  // Scrapes until pred(metrics) holds (the monitor's events arrive after
  // the client saw its session end); returns the metrics.
  async function scrapeUntil(pred, what, ms = 15000) {
    const end = Date.now() + ms;
    for (;;) {
      const m = await scrape(port);
      if (pred(m)) return m;
      if (Date.now() > end)
        throw new Error(`${what}: not seen in ${ms} ms:\n${JSON.stringify(m.families.filter(
          (f) => f.name.startsWith('sluice_stream')))}`);
      await sleep(50);
    }
  }

  const v = (m, [name, labels]) => value(m, name, labels);

  before(async () => {
    sd = await SluicedInstance.start({ label: 'smet',
      args: ['--admin-listen', '127.0.0.1:0', '--log-level', 'debug', '--max-sessions', '1'] });
    port = await adminPort();
    pod = await sd.runPod('smet', { hostNetwork: true });
    ctr = await sd.runContainer(pod, 'sleeper', { command: ['sleep', '3600'] });
  });

  after(async () => {
    terminateAll();
    await sd?.destroy();
  });

  test('every family is there with bounded labels, zero before any session', async () => {
    const m = await scrape(port);
    for (const op of ['exec', 'attach', 'portforward'])
      for (const tr of ['spdy', 'websocket', 'websocket-tunnel']) {
        assert.equal(v(m, total(op, tr)), 0, `${op}/${tr} total`);
        assert.equal(v(m, active(op, tr)), 0, `${op}/${tr} active`);
      }
    assert.equal(v(m, bytes('to_client')), 0);
    assert.equal(v(m, bytes('from_client')), 0);
    assert.equal(value(m, 'sluice_stream_tokens_pending'), 0);
    for (const reason of ['max_stream_connections', 'monitor_refused', 'monitor_gone'])
      assert.equal(value(m, 'sluice_stream_connections_refused_total', { reason }), 0, reason);
    const types = Object.fromEntries(m.families.map((f) => [f.name, f.type]));
    assert.equal(types.sluice_stream_sessions_active, 'gauge');
    assert.equal(types.sluice_stream_sessions, 'counter'); // the parser drops _total
    assert.equal(types.sluice_stream_tokens_pending, 'gauge');
  });

  test('a token issued and not used is pending; used, it is not', async () => {
    const url = await sd.execUrl(ctr, ['true']);
    let m = await scrape(port);
    assert.equal(value(m, 'sluice_stream_tokens_pending'), 1);
    await runSession(wsUrl(url), { protocols: [V5] });
    m = await scrape(port);
    assert.equal(value(m, 'sluice_stream_tokens_pending'), 0);
  });

  test('WebSocket v5 exec: total +1, ends exit +1, to_client >= the bytes received', async () => {
    const m0 = await scrapeUntil((m) => v(m, active('exec', 'websocket')) === 0, 'no live exec');
    const s = await runSession(wsUrl(await sd.execUrl(ctr, ['head', '-c', String(EXEC_BYTES),
      '/dev/zero'])), { protocols: [V5] });
    assert.equal(s.channel(CH.STDOUT).length, EXEC_BYTES);
    const received = s.messages.reduce((n, x) => n + x.rawLength, 0);
    const m1 = await scrapeUntil((m) => v(m, ends('exec', 'exit')) === v(m0, ends('exec', 'exit')) + 1,
      'the exec ended with exit');
    assert.equal(v(m1, total('exec', 'websocket')), v(m0, total('exec', 'websocket')) + 1);
    assert.equal(v(m1, total('exec', 'spdy')), v(m0, total('exec', 'spdy')));
    assert.equal(v(m1, active('exec', 'websocket')), 0);
    const grew = v(m1, bytes('to_client')) - v(m0, bytes('to_client'));
    assert.ok(grew >= received && received >= EXEC_BYTES, `to_client grew ${grew}, received ${received}`);
    assert.ok(v(m1, bytes('from_client')) >= v(m0, bytes('from_client')));
  });

  test('SPDY exec (Go spdystream client): exec/spdy total +1, its bytes counted', async () => {
    const m0 = await scrape(port);
    const url = await sd.execUrl(ctr, ['head', '-c', String(EXEC_BYTES), '/dev/zero']);
    const r = await runGoClient(['exec', '-protocols', V4, url]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdoutBytes, EXEC_BYTES);
    const m1 = await scrapeUntil((m) => v(m, total('exec', 'spdy')) === v(m0, total('exec', 'spdy')) + 1 &&
      v(m, active('exec', 'spdy')) === 0 &&
      v(m, ends('exec', 'exit')) + v(m, ends('exec', 'client_closed')) ===
        v(m0, ends('exec', 'exit')) + v(m0, ends('exec', 'client_closed')) + 1, 'the SPDY exec ended');
    assert.equal(v(m1, total('exec', 'websocket')), v(m0, total('exec', 'websocket')));
    const grew = v(m1, bytes('to_client')) - v(m0, bytes('to_client'));
    assert.ok(grew >= EXEC_BYTES, `to_client grew ${grew}`);
  });

  test('port-forward (legacy WebSocket channels): portforward total +1, bytes, client_closed', async () => {
    // The target keeps its end open: the client ends the session.
    const payload = Buffer.alloc(PF_BYTES, 0x61);
    const socks = [];
    const srv = net.createServer((c) => { socks.push(c); c.on('error', () => {}); c.write(payload); });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const m0 = await scrape(port);
      const s = await connect(wsUrl(await sd.portForwardUrl(pod.id, [srv.address().port])),
        { protocols: [V4] });
      await s.waitFor((x) => x.channel(0).length >= 2 + PF_BYTES, 'the forwarded bytes', 20000);
      const received = s.messages.reduce((n, x) => n + x.rawLength, 0);
      s.ws.close(1000);
      await s.waitClosed(10000);
      const m1 = await scrapeUntil((m) => v(m, ends('portforward', 'client_closed')) ===
        v(m0, ends('portforward', 'client_closed')) + 1, 'the port-forward ended, closed by its client');
      assert.equal(v(m1, total('portforward', 'websocket')), v(m0, total('portforward', 'websocket')) + 1);
      assert.equal(v(m1, active('portforward', 'websocket')), 0);
      const grew = v(m1, bytes('to_client')) - v(m0, bytes('to_client'));
      assert.ok(grew >= received && received >= PF_BYTES, `to_client grew ${grew}, received ${received}`);
    } finally {
      for (const c of socks) c.destroy();
      srv.close();
    }
  });

  test('a session beyond max-sessions: the monitor refuses it, counted as monitor_refused', async () => {
    const m0 = await scrape(port);
    const live = await connect(wsUrl(await sd.execUrl(ctr, ['sh', '-c', 'echo up; exec sleep 60'])),
      { protocols: [V5] });
    await live.waitFor((x) => x.text(CH.STDOUT) === 'up\n', 'the exec runs', 10000);
    await assert.rejects(connect(wsUrl(await sd.execUrl(ctr, ['true'])), { protocols: [V5] }),
      (e) => e.status === 503 && /too many streaming sessions/.test(e.body));
    const ref = (m) => value(m, 'sluice_stream_connections_refused_total', { reason: 'monitor_refused' });
    const m1 = await scrape(port);
    assert.equal(ref(m1), ref(m0) + 1);
    assert.equal(v(m1, total('exec', 'websocket')), v(m0, total('exec', 'websocket')) + 1);
    live.ws.close(1000);
    await live.waitClosed(10000);
    await scrapeUntil((m) => v(m, active('exec', 'websocket')) === 0, 'no live exec');
  });

  test('a live session is active, also after sluiced is SIGKILLed and started again', async () => {
    const s = await connect(wsUrl(await sd.execUrl(ctr, ['sh', '-c', 'echo up; exec sleep 60'])),
      { protocols: [V5] });
    await s.waitFor((x) => x.text(CH.STDOUT) === 'up\n', 'the exec runs', 10000);
    await scrapeUntil((m) => v(m, active('exec', 'websocket')) === 1, 'one live exec');
    await sd.kill();
    await sd.launch();
    port = await adminPort();
    const m = await scrapeUntil((x) => v(x, active('exec', 'websocket')) === 1,
      'the live exec counted from the monitor\'s hello', 10000);
    assert.equal(v(m, total('exec', 'websocket')), 0, 'a new sluiced counts its own starts');
    s.ws.close(1000);
    await s.waitClosed(10000);
    const m2 = await scrapeUntil((x) => v(x, active('exec', 'websocket')) === 0, 'no live exec');
    assert.equal(v(m2, ends('exec', 'client_closed')), 1);
  });

  test('every start and end at debug, in sluiced\'s log and in the monitor\'s', async () => {
    const monLog = fs.readFileSync(path.join(sd.stateDir, 'pods', pod.id, 'mon.log'), 'utf8');
    const ended = new RegExp('level=debug msg="session ended" .*operation=exec transport=websocket ' +
      `protocol=v5.channel.k8s.io container_id=${ctr} reason=exit bytes_to_client=(\\d+) ` +
      'bytes_from_client=\\d+ duration_ms=\\d+');
    const got = monLog.split('\n').map((l) => ended.exec(l)).filter(Boolean);
    assert.ok(got.length >= 2, `mon.log:\n${monLog}`);
    assert.ok(got.some((g) => Number(g[1]) >= EXEC_BYTES), 'the big exec\'s numbers');
    assert.match(monLog, /level=debug msg="session started" .*operation=exec transport=spdy protocol=v4.channel.k8s.io/);
    assert.match(monLog, new RegExp('level=debug msg="session ended" .*operation=portforward ' +
      `transport=websocket protocol=v4.channel.k8s.io pod_sandbox_id=${pod.id} reason=client_closed`));
    // sluiced's log (the one started after the kill saw the last end)
    assert.match(sd.proc.stderr, new RegExp('level=debug msg="session ended" .*operation=exec ' +
      `transport=websocket protocol=v5.channel.k8s.io container_id=${ctr} reason=client_closed ` +
      'bytes_to_client=\\d+ bytes_from_client=\\d+ duration_ms=\\d+'));
  });

  test('no sanitizer report from sluiced or the monitor', () => {
    assert.deepEqual(sd.sanitizerReports(), []);
  });
});
