// The native exec path (issue 16) against `runc exec`: a differential test.
// One sluiced, one pod, a matrix of containers (default; privileged;
// capabilities dropped but one; RuntimeDefault seccomp; 1000:1000 with
// supplemental groups; read-only rootfs; no_new_privs with RuntimeDefault).
// Every container gets the same probe through ExecSync and streaming exec
// (sluicectl, SPDY), and a tty exec (sluicectl -t), once with
// exec-mode=runc and once, after a restart of sluiced (the pod monitors and
// containers keep running), with exec-mode=native. What the process sees
// from inside must be identical: /proc/self/status (Cap*, NoNewPrivs,
// Seccomp, Uid, Gid, Groups), /proc/self/cgroup, its namespaces, env, cwd,
// `ulimit -a`, umask, oom_score_adj, the errno of the calls RuntimeDefault
// blocks (tests/interop/c/seccomp_probe.c), `stty size` on a tty. The
// monitor's log must show the native starter ran (no silent fallback), and
// the exec must sit in the container's cgroups (its memory limit applies).
// A missing binary gives the same error either way, and so do exit codes
// and signals. The containers start together and are probed together (the
// state each exec sees is its own), so the matrix costs about as much as
// its slowest container.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REPO } from './lib/hostd.mjs';
import { BUSYBOX_IMAGE, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';
import { ctl } from './lib/sluicectl.mjs';

const SUITE_TIMEOUT_MS = 240000;
const MEMORY_LIMIT = 64 * 1024 * 1024;

// The probe: one section per property, each line prefixed for a clear diff.
const PROBE = [
  "grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status",
  'sed "s/^/cgroup /" /proc/self/cgroup',
  'for n in /proc/self/ns/*; do echo "ns $n $(readlink $n)"; done',
  'env | sort | sed "s/^/env /"',
  'echo "cwd $(pwd)"',
  'ulimit -a | sed "s/^/ulimit /"',
  'echo "umask $(umask)"',
  'echo "oom $(cat /proc/self/oom_score_adj)"',
  'echo "sid $(cut -d" " -f6 /proc/self/stat) pid $$"',
  '/probe/seccomp_probe | sed "s/^/seccomp /"',
  // a non-root user reopens its stdio (runc chowns it to the user)
  'echo "stdio reopened-stdout" > /dev/stdout',
].join('; ');
const TTY_PROBE = `${PROBE}; echo "tty $(tty)"; echo "stty $(stty size)"`;

const MATRIX = {
  default: {},
  privileged: { privileged: true },
  'caps-drop-all-add-one': { capabilities: { drop_capabilities: ['ALL'],
    add_capabilities: ['NET_BIND_SERVICE'] } },
  'runtime-default-seccomp': { seccomp: { profile_type: 'RuntimeDefault' } },
  'user-1000-groups': { run_as_user: { value: 1000 }, run_as_group: { value: 1000 },
    supplemental_groups: [2000, 3000] },
  'readonly-rootfs': { readonly_rootfs: true },
  'no-new-privs-seccomp': { no_new_privs: true, seccomp: { profile_type: 'RuntimeDefault' } },
};

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
}

// The lines of a probe's output that may differ between two execs of the
// same state: the exec's own pid and session (compared as "pid == sid").
function normalise(out) {
  return out.split('\n').map((l) => {
    const m = /^sid (\d+) pid (\d+)$/.exec(l);
    return m ? `session-leader ${m[1] === m[2]}` : l;
  }).join('\n');
}

const ctx = { sd: null, tmp: null, pod: null, ctrs: {}, seen: { runc: {}, native: {} } };

// One container: the probe through ExecSync, streaming exec and tty exec
// at once; for the default one also the exit codes and start errors.
async function probeOne(mode, name, id) {
  const seen = ctx.seen[mode];
  const ep = ctx.sd.endpoint;
  const jobs = [
    ctx.sd.execSync(id, ['sh', '-c', PROBE], 30).then((s) => {
      assert.equal(s.exit_code, 0, `${mode} ${name} ExecSync: ${s.stderr}`);
      seen[`${name} sync`] = normalise(s.stdout.toString());
    }),
    ctl(['-r', ep, 'exec', id, 'sh', '-c', PROBE]).then((t) => {
      assert.equal(t.code, 0, `${mode} ${name} exec: ${t.stderr}`);
      seen[`${name} stream`] = normalise(t.stdout);
    }),
    ctl(['-r', ep, 'exec', '-t', id, 'sh', '-c', TTY_PROBE]).then((y) => {
      assert.equal(y.code, 0, `${mode} ${name} exec -t: ${y.stderr}`);
      seen[`${name} tty`] = normalise(y.stdout.replace(/\r\n/g, '\n'));
    }),
  ];
  if (name === 'default') { // exit codes and start errors: once
    for (const [cmd, want] of [[['sh', '-c', 'exit 3'], 3], [['sh', '-c', 'kill -TERM $$'], 143]])
      jobs.push(ctx.sd.execSync(id, cmd, 30).then((r) =>
        assert.equal(r.exit_code, want, `${mode} ${name} ${cmd.join(' ')}`)));
    for (const bin of ['/no/such', 'no-such-command'])
      jobs.push(ctx.sd.execSync(id, [bin], 30).then(() => null, (e) => e).then((err) => {
        assert.ok(err, `${mode} ${name} ${bin}: no error`);
        seen[`${name} missing ${bin}`] = `${err.code} ${err.details.replace(/exec "[0-9a-f]+"/, 'exec "ID"')}`;
      }));
  }
  await Promise.all(jobs);
}

async function probeAll(mode) {
  await Promise.all(Object.entries(ctx.ctrs).map(([name, id]) => probeOne(mode, name, id)));
}

function monLog() {
  return fs.readFileSync(path.join(ctx.sd.stateDir, 'pods', ctx.pod.id, 'mon.log'), 'utf8');
}

// The pod's exec scratch dirs (runc exec's, exec/ID in its run dir): the
// entries and the dir's mtime, which any entry made or removed changes.
function execScratch() {
  const dir = path.join(ctx.sd.runDir, 'pods', ctx.pod.id, 'exec');
  if (!fs.existsSync(dir)) return { entries: [], mtime: null };
  return { entries: fs.readdirSync(dir), mtime: fs.statSync(dir, { bigint: true }).mtimeNs };
}

async function switchMode(mode) {
  ctx.sd.opts.args = ['--exec-mode', mode];
  await ctx.sd.restart();
}

describe('native exec path against runc exec', { skip: skipReason(), timeout: SUITE_TIMEOUT_MS }, () => {
  before(async () => {
    const t0 = Date.now();
    ctx.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-nexec-'));
    const probeDir = path.join(ctx.tmp, 'probe');
    fs.mkdirSync(probeDir);
    for (const probe of ['seccomp_probe', 'pipe_size'])
      run('gcc', ['-static', '-O1', '-o', path.join(probeDir, probe),
        path.join(REPO, `tests/interop/c/${probe}.c`)]);
    ctx.sd = await SluicedInstance.start({ label: 'nexec', args: ['--exec-mode', 'runc'] });
    const config = ctx.sd.podConfig('nexec', { hostNetwork: true });
    config.linux.security_context.privileged = true; // for the privileged container
    const { pod_sandbox_id: podId } = await ctx.sd.rt.RunPodSandbox({ config });
    ctx.sd.podIds.add(podId);
    const pod = { id: podId, config };
    ctx.pod = pod;
    await Promise.all(Object.entries(MATRIX).map(async ([name, sc]) => {
      const config = { ...ctx.sd.ctrConfig(name, { command: ['sleep', '3600'] }),
        mounts: [{ container_path: '/probe', host_path: probeDir, readonly: true }],
        linux: { security_context: sc, resources: { memory_limit_in_bytes: MEMORY_LIMIT } } };
      const { container_id: id } = await ctx.sd.rt.CreateContainer(
        { pod_sandbox_id: pod.id, config, sandbox_config: pod.config });
      await ctx.sd.rt.StartContainer({ container_id: id });
      ctx.ctrs[name] = id;
    }));
    // the same order whatever finished first (for the report's keys)
    ctx.ctrs = Object.fromEntries(Object.keys(MATRIX).map((n) => [n, ctx.ctrs[n]]));
    console.log(`# set-up (probe build, sluiced, pod, ${Object.keys(MATRIX).length} containers): ` +
      `${Date.now() - t0} ms`);
  });

  after(async () => {
    const t0 = Date.now();
    await ctx.sd?.destroy();
    console.log(`# tear-down: ${Date.now() - t0} ms`);
    if (ctx.tmp) fs.rmSync(ctx.tmp, { recursive: true, force: true });
  });

  test('runc exec, then the native path: the same state from inside, for every container', async () => {
    const t0 = Date.now();
    await probeAll('runc');
    const t1 = Date.now();
    const before = (monLog().match(/: starter pid \d+/g) || []).length;
    assert.equal(before, 0, 'exec-mode=runc started no native exec');
    // every runc exec removed its scratch dir (right after its exit event)
    for (let t = 0; execScratch().entries.length && t < 50; t++) await sleep(100);
    assert.deepEqual(execScratch().entries, [], 'runc execs left no scratch dir');
    await switchMode('native');
    const scratch = execScratch();
    const t2 = Date.now();
    await probeAll('native');
    // the native path writes no file: the pod's exec/ was not touched
    assert.deepEqual(execScratch(), scratch, 'native execs made no scratch dir');
    console.log(`# probes with runc ${t1 - t0} ms, restart ${t2 - t1} ms, native ${Date.now() - t2} ms`);
    const starters = (monLog().match(/: starter pid \d+/g) || []).length;
    // per container: sync, stream, tty; the default one also 2 exit codes
    // and 2 missing binaries
    assert.equal(starters, Object.keys(MATRIX).length * 3 + 4, 'every exec took the native path');
    for (const key of Object.keys(ctx.seen.runc))
      assert.equal(ctx.seen.native[key], ctx.seen.runc[key], `${key}: native differs from runc`);
  });

  test('the native exec runs in the container\'s cgroups (its memory limit applies)', async () => {
    const id = ctx.ctrs.default;
    const r = await ctx.sd.execSync(id, ['sh', '-c', 'cat /proc/self/cgroup; echo ==; cat /proc/1/cgroup'], 30);
    const [mine, init] = r.stdout.toString().split('==\n');
    const mem = (t) => t.split('\n').find((l) => /:memory:/.test(l));
    assert.ok(mem(mine), `a memory cgroup line: ${mine}`);
    assert.equal(mem(mine), mem(init), 'the exec is in the container\'s memory cgroup');
    const limit = await ctx.sd.execSync(id, ['cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes'], 30);
    assert.equal(Number(limit.stdout.toString()), MEMORY_LIMIT);
  });

  // What the exec's process itself reads with F_GETPIPE_SZ on its stdin:
  // the default, then a configured size after a restart, in both modes.
  test('exec-stdin-pipe-size: the pipe an exec reads its stdin from, seen from inside', async () => {
    const id = ctx.ctrs['user-1000-groups'];
    const size = async (what) => {
      const t = await ctl(['-r', ctx.sd.endpoint, 'exec', '-i', id, '/probe/pipe_size'],
        { input: '' });
      assert.equal(t.code, 0, `${what}: ${t.stdout} ${t.stderr}`);
      return Number(t.stdout.trim());
    };
    assert.equal(await size('native, default'), 512 * 1024);
    const noStdin = await ctl(['-r', ctx.sd.endpoint, 'exec', id, '/probe/pipe_size']);
    assert.match(noStdin.stdout, /^not a pipe: EBADF$/m, 'an exec without stdin gets no pipe');
    for (const mode of ['runc', 'native']) {
      ctx.sd.opts.args = ['--exec-mode', mode, '--exec-stdin-pipe-size', '131072'];
      await ctx.sd.restart();
      assert.equal(await size(`${mode}, 131072`), 131072);
    }
  });

  test('what each case saw (for the report)', () => {
    const def = ctx.seen.native['runtime-default-seccomp sync'] || '';
    assert.match(def, /^Seccomp:\s+2$/m, 'RuntimeDefault: Seccomp 2');
    assert.match(def, /^seccomp unshare EPERM$/m, 'RuntimeDefault blocks unshare');
    const user = ctx.seen.native['user-1000-groups sync'] || '';
    assert.match(user, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    assert.match(user, /^Groups:\s+1000 2000 3000\s*$/m);
    const caps = ctx.seen.native['caps-drop-all-add-one sync'] || '';
    assert.match(caps, /^CapBnd:\s+0000000000000400$/m, 'bounding set: NET_BIND_SERVICE only');
    assert.match(ctx.seen.native['default tty'] || '', /^tty \/dev\/pts\/\d+$/m);
    assert.match(user, /^stdio reopened-stdout$/m, 'a non-root exec reopens /dev/stdout');
  });
});
