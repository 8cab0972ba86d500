// Proves that bench/run still works end to end: both daemons start, every
// workload runs against both (tiny sizes, one run), and the report has a
// value where one is expected. Not a performance check: the numbers are
// whatever this machine gives. Takes about 40 s.
//
// The build dir is the one $SLUICED belongs to (scripts/check points it at
// each build), else build/; bench/run is told not to build.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from './lib/hostd.mjs';
import { SLUICED } from './lib/sluiced.mjs';

const BUILD = path.resolve(path.dirname(SLUICED), '../..');
const BENCH = path.join(BUILD, 'bench/sl-bench');
// 41 s on an idle machine (gcc) before the restart workload (+ ~12 s: containerd takes ~5 s
// to come back, twice); ASan on a loaded one took over 60.
const RUN_TIMEOUT_MS = 180000;
// Tiny sizes: every workload, one run, a few seconds each.
const TINY = [
  '--stdout-bytes', String(1 << 20), '--stdin-bytes', String(1 << 20),
  '--pf-bytes', String(1 << 20), '--hol-bytes', String(256 << 10),
  '--true-iters', '3', '--split-iters', '2', '--probe-iters', '5', '--conc', '4', '--conc-sleep', '1',
  '--attach-window', '0.2', '--hol-timeout', '1',
  // Big enough that the restart comes a quarter in, long before the end.
  '--restart-bytes', String(64 << 20),
];
// Rows (workload/metric) that must have a value for both runtimes.
const BOTH = [
  ['exec_true', 'total_ms'], ['exec_split', 'status_ms'], ['exec_probe', 'wall_s'],
  ['exec_probe', 'cpu_s'], ['exec_probe', 'cpu_reaped_s'], ['exec_stdout', 'mibps_64k_spdy'],
  ['exec_stdout', 'mibps_4k_websocket'], ['exec_stdin', 'mibps_stdin_spdy'],
  ['pf', 'mibps_down_spdy'], ['pf', 'mibps_up_spdy'], ['hol', 'others_mibps_reading'],
  ['conc4', 'live_peak'], ['attach', 'log_mibps_alone'], ['restart', 'lost_mib_spdy'],
  ['restart', 'back_s'],
];
// The exec rows of the second sluiced, exec-mode runc (its own column
// value, next to the default native one).
const RUNC_ROWS = [['exec_true', 'total_ms'], ['exec_probe', 'wall_s'], ['exec_probe', 'cpu_s'],
  ['exec_probe', 'cpu_reaped_s']];
// Rows only sluiced can have (containerd refuses these transports).
const SLUICE_ONLY = [['exec_stdin', 'mibps_stdin_websocket'], ['pf', 'mibps_down_tunnel']];

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function skipReason() {
  if (process.getuid?.() !== 0) return 'needs root (runc, mounts, namespaces)';
  for (const c of ['containerd', 'runc', 'ctr'])
    if (!have(c)) return `${c} not installed (apt-get install containerd runc)`;
  if (!fs.existsSync('/bin/busybox')) return '/bin/busybox missing (apt-get install busybox-static)';
  if (!fs.existsSync(BENCH)) return `no ${BENCH} (build with -Dtests=true)`;
  if (!fs.existsSync(SLUICED)) return `no sluiced at ${SLUICED}`;
  return false;
}

function runBench(out) {
  return new Promise((resolve) => {
    const args = ['--quick', '--runs', '1', '--build', BUILD, '--no-build',
      '--out', out, '--', ...TINY];
    const p = spawn(path.join(REPO, 'bench/run'), args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    p.stdout.on('data', (d) => { log += d; });
    p.stderr.on('data', (d) => { log += d; });
    const timer = setTimeout(() => p.kill('SIGTERM'), RUN_TIMEOUT_MS);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, log });
    });
  });
}

test('bench/run --quick: both runtimes (sluice native and runc in the exec rows), every workload, a table, JSON and chart input',
  { skip: skipReason(), timeout: RUN_TIMEOUT_MS + 15000 }, async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'sl-bench-smoke-'));
    try {
      const t0 = Date.now();
      const r = await runBench(out);
      const secs = (Date.now() - t0) / 1000;
      assert.equal(r.code, 0, `bench/run exit ${r.code} ${r.signal ?? ''} after ${secs} s:\n${r.log.slice(-6000)}`);
      const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
      const md = fs.readFileSync(path.join(out, 'results.md'), 'utf8');
      assert.match(md, /^\| workload \| unit \| sluice \| containerd \|/m);
      assert.ok(fs.existsSync(path.join(out, 'chart.gp')), 'no chart.gp');
      const row = (wl, m, side = 'sluice') =>
        res.rows.find((x) => x.workload === wl && x.metric === m && x.side === side);
      const why = `\nerrors: ${JSON.stringify(res.errors)}\n${r.log.slice(-3000)}`;
      for (const [wl, m] of BOTH) {
        const x = row(wl, m);
        assert.ok(x, `no row ${wl}/${m}`);
        assert.ok(x.sluice?.v != null, `${wl}/${m}: no sluice value${why}`);
        assert.ok(x.containerd?.v != null, `${wl}/${m}: no containerd value${why}`);
      }
      for (const [wl, m] of RUNC_ROWS) {
        const x = row(wl, m, 'sluice-runc');
        assert.ok(x?.sluice?.v != null, `${wl}/${m}: no value for sluice with exec-mode runc${why}`);
        assert.ok(x.containerd?.v != null, `${wl}/${m} (runc row): no containerd value${why}`);
      }
      // the native rows are those of the sluiced started with exec-mode native
      assert.equal(res.runtimes['sluice-runc']?.exec_only, true, 'no exec-only runc sluiced');
      for (const [wl, m] of SLUICE_ONLY)
        assert.ok(row(wl, m)?.sluice?.v != null, `${wl}/${m}: no sluice value${why}`);
      assert.ok(row('exec_stdout', 'mibps_64k_spdy').tcp?.v > 0, 'no loopback TCP limit');
      // sluiced's sessions live in the pod monitors: a SIGKILL of sluiced a quarter into the
      // transfer loses nothing and the exit status still comes, on both transports.
      for (const tr of ['spdy', 'websocket']) {
        assert.equal(row('restart', `lost_mib_${tr}`).sluice?.v, 0, `restart ${tr}: bytes lost${why}`);
        assert.equal(row('restart', `status_${tr}`).sluice?.v, 1, `restart ${tr}: no exit status${why}`);
      }
      assert.equal(res.runtimes.containerd.pf_tunnel, false, 'containerd took a tunnel?');
      assert.ok(secs < RUN_TIMEOUT_MS / 1000, `took ${secs} s`);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
