// sluiced as an operator runs it: the admin listener (/healthz, /readyz,
// /metrics read by the Prometheus project's own text parser from Debian's
// python3-prometheus-client, its counters moving with real CRI calls), the
// log (a failed CRI call at warn with its ids; the level), SIGHUP reloading
// the config file and saying what changed, sd_notify as systemd's
// Type=notify reads it, and the pods surviving a stop of the service's
// cgroup the way systemd does it (KillMode=mixed: SIGTERM to sluiced, then
// SIGKILL to whatever is left in the cgroup) because their monitors moved
// into monitor-cgroup. Needs root, runc and python3-prometheus-client.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as S } from './lib/cri.mjs';
import { SluicedInstance, monitorsUnder, skipReason, sleep } from './lib/sluiced.mjs';

const PY = '/usr/bin/python3';
const PROM_PARSE = path.join(import.meta.dirname, 'py/prom_parse.py');
const promMissing = spawnSync(PY, ['-c', 'import prometheus_client.parser'], { stdio: 'ignore' })
  .status !== 0;
const skip = skipReason() ||
  (promMissing && 'python3-prometheus-client is not installed (scripts/deps installs it)');
// This file's own cgroups: the stand-in for systemd's sluiced.service and
// the monitors' cgroup (unique per run: other test files use the default).
const SVC = `ops2-svc-${process.pid}`;
const MON_CGROUP = `/sluice-test/ops2-mon-${process.pid}`;

// ---- HTTP and the Prometheus parser ---------------------------------------

function get(port, urlPath, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// /metrics through prometheus_client.parser: {families: [{name, type, samples}]}.
async function scrape(port) {
  const r = await get(port, '/metrics');
  assert.equal(r.status, 200, r.body);
  const p = spawnSync(PY, [PROM_PARSE], { input: r.body, encoding: 'utf8' });
  assert.equal(p.status, 0, `the parser refused /metrics: ${p.stderr}\n${r.body}`);
  return { text: r.body, contentType: r.headers['content-type'], ...JSON.parse(p.stdout) };
}

// The value of the sample name{labels} (0 when absent: a counter not yet seen).
function value(m, name, labels = {}) {
  for (const f of m.families)
    for (const s of f.samples)
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        return s.value;
  return 0;
}

function family(m, name) {
  return m.families.find((f) => f.name === name);
}

// ---- the stand-in service cgroup ------------------------------------------

// Every cgroup hierarchy of this process: {dir: our cgroup's directory,
// cpuset}. v1 controllers and named ones (name=systemd), and v2.
function hierarchies() {
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => {
    const [pre, post] = l.split(' - ');
    if (!post) return null;
    const f = pre.split(' '), [fstype, , opts] = post.split(' ');
    return { root: f[3], mp: f[4], fstype, opts: (opts || '').split(',') };
  }).filter((m) => m && (m.fstype === 'cgroup' || m.fstype === 'cgroup2'));
  const out = [];
  for (const line of fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, ctrls, cgPath] = line.match(/^\d+:([^:]*):(.*)$/);
    const want = ctrls ? ctrls.split(',') : [];
    const m = mounts.find((x) => (ctrls ? x.fstype === 'cgroup' && want.every((c) => x.opts.includes(c))
      : x.fstype === 'cgroup2'));
    if (!m) continue;
    const rel = path.relative(m.root, cgPath);
    if (rel.startsWith('..')) continue;
    out.push({ dir: path.join(m.mp, rel), mp: m.mp, root: m.root, cpuset: want.includes('cpuset'),
      key: ctrls || 'v2' });
  }
  return out;
}

// A child of our own cgroup in every hierarchy, as systemd makes one per
// service; pids moved in; its members, and its removal.
class ServiceCgroup {
  constructor(name) {
    this.dirs = hierarchies().map((h) => {
      const dir = path.join(h.dir, name);
      fs.mkdirSync(dir, { recursive: true });
      if (h.cpuset)
        for (const f of ['cpuset.cpus', 'cpuset.mems'])
          fs.writeFileSync(path.join(dir, f), fs.readFileSync(path.join(h.dir, f)));
      return { dir, key: h.key };
    });
  }

  add(pid) {
    for (const d of this.dirs) fs.writeFileSync(path.join(d.dir, 'cgroup.procs'), `${pid}\n`);
  }

  // Pids in the cgroup, by hierarchy.
  members() {
    const out = {};
    for (const d of this.dirs) {
      const pids = fs.readFileSync(path.join(d.dir, 'cgroup.procs'), 'utf8').trim();
      if (pids) out[d.key] = pids.split('\n').map(Number);
    }
    return out;
  }

  // What systemd does after the main process of a KillMode=mixed unit exits.
  killAll() {
    const killed = new Set();
    for (const pids of Object.values(this.members())) {
      for (const pid of pids) {
        if (killed.has(pid)) continue;
        killed.add(pid);
        try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }
    return [...killed];
  }

  remove() {
    for (const d of this.dirs) {
      // our own pids, if a failed test left any, go back to the parent
      try {
        for (const pid of fs.readFileSync(path.join(d.dir, 'cgroup.procs'), 'utf8').trim()
          .split('\n').filter(Boolean))
          fs.writeFileSync(path.join(path.dirname(d.dir), 'cgroup.procs'), `${pid}\n`);
        fs.rmdirSync(d.dir);
      } catch { /* busy or gone */ }
    }
  }
}

// The monitor cgroup's directories (made by sluice-mon), deepest first.
function removeMonitorCgroup() {
  for (const h of hierarchies()) {
    for (const cg of [MON_CGROUP, path.dirname(MON_CGROUP)]) {
      const rel = path.relative(h.root, cg);
      if (rel.startsWith('..')) continue;
      try { fs.rmdirSync(path.join(h.mp, rel)); } catch { /* busy (another run), or gone */ }
    }
  }
}

// /proc/PID/cgroup as {hierarchy key: path}.
function cgroupsOf(pid) {
  const out = {};
  for (const line of fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [, ctrls, p] = line.match(/^\d+:([^:]*):(.*)$/);
    out[ctrls || 'v2'] = p;
  }
  return out;
}

// ---- sd_notify -------------------------------------------------------------

// A NOTIFY_SOCKET (unix datagram, as systemd's) whose messages collect in .messages.
class NotifyListener {
  constructor(sockPath) {
    this.path = sockPath;
    this.messages = [];
    this.proc = spawn(PY, ['-u', '-c', `
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    print(json.dumps(s.recv(4096).decode()), flush=True)
`, sockPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.buf = '';
    this.bound = new Promise((resolve) => {
      this.proc.stdout.on('data', (d) => {
        this.buf += d;
        let i;
        while ((i = this.buf.indexOf('\n')) >= 0) {
          const line = this.buf.slice(0, i);
          this.buf = this.buf.slice(i + 1);
          if (line === 'bound') resolve();
          else this.messages.push(JSON.parse(line));
        }
      });
    });
  }

  async waitFor(re, from = 0, ms = 10000) {
    const end = Date.now() + ms;
    for (;;) {
      const i = this.messages.findIndex((m, k) => k >= from && re.test(m));
      if (i >= 0) return i;
      if (Date.now() > end)
        throw new Error(`no notify message ${re} in ${ms} ms: ${JSON.stringify(this.messages)}`);
      await sleep(20);
    }
  }

  close() {
    this.proc.kill('SIGKILL');
  }
}

// ---- the log ---------------------------------------------------------------

// stderr's logfmt lines matching every regexp.
function logLines(sd, ...res) {
  return sd.proc.stderr.split('\n').filter((l) => res.every((re) => re.test(l)));
}

async function waitLog(sd, ms, ...res) {
  const end = Date.now() + ms;
  for (;;) {
    const got = logLines(sd, ...res);
    if (got.length) return got;
    if (Date.now() > end) throw new Error(`no log line ${res.join(' ')} in ${ms} ms:\n${sd.describe()}`);
    await sleep(20);
  }
}

describe('sluiced for operators: admin listener, log, reload, sd_notify, service cgroup', { skip }, () => {
  let sd, svc, notify, port, cfgPath;

  before(async () => {
    svc = new ServiceCgroup(SVC);
    const dir = fs.mkdtempSync('/tmp/sd-adm-cfg-');
    cfgPath = path.join(dir, 'sluiced.json');
    // Port 0: any free one, read back from the "sluiced ready" line.
    fs.writeFileSync(cfgPath, JSON.stringify({ 'log-level': 'info', 'admin-listen': '127.0.0.1:0' }));
    notify = new NotifyListener(path.join(dir, 'notify.sock'));
    await notify.bound;
    process.env.NOTIFY_SOCKET = notify.path;
    try {
      sd = await SluicedInstance.start({ label: 'admin',
        args: ['--config', cfgPath, '--monitor-cgroup', MON_CGROUP] });
    } finally {
      delete process.env.NOTIFY_SOCKET;
    }
    sd.cfgDir = dir;
    svc.add(sd.proc.proc.pid);
    const ready = await waitLog(sd, 5000, /msg="sluiced ready"/);
    port = Number(/ admin=http:\/\/127\.0\.0\.1:(\d+)\//.exec(ready[0])[1]);
  });

  after(async () => {
    await sd?.destroy();
    notify?.close();
    svc?.remove();
    removeMonitorCgroup();
    if (sd?.cfgDir) fs.rmSync(sd.cfgDir, { recursive: true, force: true });
  });

  test('sd_notify: READY=1 with a STATUS naming the endpoints', async () => {
    const i = await notify.waitFor(/^READY=1\nSTATUS=CRI on unix:\/\//);
    assert.match(notify.messages[i], new RegExp(`STATUS=CRI on unix://${sd.sock}, streaming on http://127\\.0\\.0\\.1:\\d+/`));
  });

  test('/healthz and /readyz answer ok; other paths 404, other methods 405', async () => {
    for (const p of ['/healthz', '/readyz']) {
      const r = await get(port, p);
      assert.deepEqual([r.status, r.body], [200, 'ok\n'], p);
    }
    assert.equal((await get(port, '/nope')).status, 404);
    const post = await get(port, '/metrics', 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  test('/metrics parses with prometheus_client; CRI counters, histograms and gauges move with calls', async () => {
    const m0 = await scrape(port);
    assert.match(m0.contentType, /^text\/plain; version=0\.0\.4/);
    assert.equal(family(m0, 'sluice_cri_requests').type, 'counter');
    assert.equal(family(m0, 'sluice_cri_request_duration_seconds').type, 'histogram');
    assert.equal(value(m0, 'sluice_build_info'), 1);
    const ok = { method: 'Version', code: 'OK' };
    const nf = { method: 'PodSandboxStatus', code: 'NOT_FOUND' };

    for (let i = 0; i < 3; i++) await sd.rt.Version({});
    await assert.rejects(sd.rt.PodSandboxStatus({ pod_sandbox_id: 'f'.repeat(64) }),
      (e) => e.code === S.NOT_FOUND);
    await sd.img.PullImage({ image: { image: 'localhost/sluice/busybox:latest' } });
    const pod = await sd.runPod('metrics', { hostNetwork: true });
    const ctr = await sd.runContainer(pod, 'c', { command: ['sleep', '1000'] });
    const m1 = await scrape(port);

    assert.equal(value(m1, 'sluice_cri_requests_total', ok) - value(m0, 'sluice_cri_requests_total', ok), 3);
    assert.equal(value(m1, 'sluice_cri_requests_total', nf) - value(m0, 'sluice_cri_requests_total', nf), 1);
    const cnt = (m, mt) => value(m, 'sluice_cri_request_duration_seconds_count', { method: mt });
    assert.equal(cnt(m1, 'Version') - cnt(m0, 'Version'), 3);
    assert.equal(value(m1, 'sluice_cri_request_duration_seconds_bucket', { method: 'Version', le: '+Inf' }),
      cnt(m1, 'Version'));
    assert.ok(value(m1, 'sluice_cri_request_duration_seconds_sum', { method: 'RunPodSandbox' }) > 0);
    assert.equal(value(m1, 'sluice_pods', { state: 'ready' }), 1);
    assert.equal(value(m1, 'sluice_containers', { state: 'running' }), 1);
    assert.equal(value(m1, 'sluice_monitors_alive'), 1);
    assert.ok(value(m1, 'sluice_image_imports_total') >= 1, m1.text);
    assert.ok(value(m1, 'sluice_grpc_connections') >= 1);
    sd.metricsPod = { pod, ctr };
  });

  test('a failed CRI call is one warn line with method, code, error and the ids asked for', async () => {
    const id = 'e'.repeat(64);
    await assert.rejects(sd.rt.ContainerStatus({ container_id: id }), (e) => e.code === S.NOT_FOUND);
    const [line] = await waitLog(sd, 5000, /msg="CRI call failed"/, /method=ContainerStatus/,
      new RegExp(`container=${id}`));
    assert.match(line, /^time=\d{4}-\d\d-\d\dT[\d:.]+Z level=warn msg="CRI call failed" /);
    assert.match(line, / code=NOT_FOUND /);
    assert.match(line, / error="[^"]+"/);
    assert.match(line, / duration_ms=\d+\.\d{3}$/);
    // at info, a successful Version says nothing; RunPodSandbox is an info line
    assert.deepEqual(logLines(sd, /method=Version/), []);
    assert.equal(logLines(sd, /level=info/, /method=RunPodSandbox/).length, 1);
  });

  test('SIGHUP re-reads the file: live keys applied, the others announced for the next start, each logged', async () => {
    fs.writeFileSync(cfgPath, JSON.stringify({ 'log-level': 'debug', 'admin-listen': '127.0.0.1:0',
      'max-event-subscribers': 7, 'token-ttl-ms': 1234 }));
    const from = notify.messages.length;
    sd.proc.proc.kill('SIGHUP');
    await waitLog(sd, 5000, /msg=reloaded/);
    assert.equal(logLines(sd, /level=info msg="reload: applied" key=log-level was=info now=debug/).length, 1);
    assert.equal(logLines(sd, /msg="reload: applied" key=max-event-subscribers was=\d+ now=7/).length, 1);
    assert.equal(logLines(sd,
      /level=warn msg="reload: changed, takes effect at the next start" key=token-ttl-ms was=\d+ now=1234/).length, 1);
    assert.match(logLines(sd, /msg=reloaded/)[0], new RegExp(`config=${cfgPath} applied=2$`));
    const r = await notify.waitFor(/^RELOADING=1/, from);
    await notify.waitFor(/^READY=1/, r);
    // debug now: a successful Version is logged
    await sd.rt.Version({});
    await waitLog(sd, 5000, /level=debug msg="CRI call" method=Version/);
  });

  test('a reload from a broken file keeps the running configuration and says why', async () => {
    fs.writeFileSync(cfgPath, '{"log-level": "loud"}');
    sd.proc.proc.kill('SIGHUP');
    const [line] = await waitLog(sd, 5000, /msg="reload failed; the running configuration is kept"/);
    assert.match(line, /level=error .*error=".*log-level: \\"loud\\" is not one of error, warn, info, debug"/);
    await sd.rt.Version({});
    assert.equal((await get(port, '/readyz')).status, 200);
  });

  test('service stop as systemd does it (SIGTERM, then SIGKILL to the cgroup) leaves the pod running', async () => {
    const { pod, ctr } = sd.metricsPod;
    const [mon] = monitorsUnder(sd.root);
    assert.ok(mon, 'the pod has a monitor');
    // the monitor left the service's cgroup for monitor-cgroup in every hierarchy
    const mcg = cgroupsOf(mon);
    for (const d of svc.dirs) assert.ok(mcg[d.key].endsWith(MON_CGROUP), `${d.key}: ${mcg[d.key]}`);
    assert.deepEqual(Object.keys(svc.members()).sort(), svc.dirs.map((d) => d.key).sort(),
      'sluiced itself is in the service cgroup');
    const inside = await sd.execSync(ctr, ['cat', '/proc/self/cgroup']);
    assert.ok(!inside.stdout.toString().includes(SVC), inside.stdout.toString());

    const from = notify.messages.length;
    sd.cri.close();
    sd.cri = null;
    sd.proc.proc.kill('SIGTERM');
    assert.deepEqual(await sd.proc.waitExit(30000), { code: 0, signal: null });
    await notify.waitFor(/^STOPPING=1/, from);
    const killed = svc.killAll();
    assert.deepEqual(killed, [], 'nothing of the pod was left in the service cgroup');
    await sleep(200);
    assert.deepEqual(monitorsUnder(sd.root), [mon]);

    fs.writeFileSync(cfgPath, JSON.stringify({ 'admin-listen': '127.0.0.1:0' }));
    await sd.launch(); // "systemctl start": the new sluiced finds the pod running
    svc.add(sd.proc.proc.pid);
    assert.equal((await sd.status(ctr)).state, 'CONTAINER_RUNNING');
    const r = await sd.execSync(ctr, ['echo', 'still here']);
    assert.equal(r.stdout.toString(), 'still here\n');
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    await sd.stop();
  });
});

describe('a monitor-cgroup the monitor cannot join', { skip }, () => {
  let sd;
  after(async () => { await sd?.destroy(); });

  test('RunPodSandbox fails with the reason; no monitor or pod is left', async () => {
    // cgroup.procs is a file at every hierarchy's root: no cgroup can be made below it
    sd = await SluicedInstance.start({ label: 'admcg', args: ['--monitor-cgroup', '/cgroup.procs/x'] });
    await assert.rejects(sd.runPod('nocg', { hostNetwork: true }), (e) => {
      assert.match(e.details, /--cgroup \/cgroup\.procs\/x: /);
      return true;
    });
    assert.deepEqual((await sd.rt.ListPodSandbox({})).items, []);
    // The monitor exits right after its error; a sanitizer's exit (its
    // leak check) may still be running when the answer arrives.
    const t0 = Date.now();
    for (let i = 0; i < 50 && monitorsUnder(sd.root).length; i++) await sleep(100);
    console.log(`# the failed monitor's processes were gone after ${Date.now() - t0} ms`);
    assert.deepEqual(monitorsUnder(sd.root), []);
    await sd.stop();
  });
});
