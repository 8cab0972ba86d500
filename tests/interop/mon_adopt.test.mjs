// A pod monitor killed with SIGKILL while its containers write: sluiced
// notices (a pidfd), starts a new monitor (sluice-mon --adopt) and hands it
// each running container with the duplicates of its output fds that
// sluiced kept since the container was created. Looked at as a user would:
// the container's pid (ContainerStatus) is the same before and after, it is
// RUNNING at every poll, the pod is READY again once adopted (one created but
// not started then starts in the new monitor), the CRI log
// holds every number the container wrote (0..N, no gap, no repeat) across
// the kill, a tty container's log goes on too, an ExecSync the dead monitor
// served fails naming that, exec, attach and port-forward work in the new
// monitor, StopContainer gives the container's own exit code (trap on
// TERM → exit 7), and RemovePodSandbox leaves no process and no directory.
// The pod's PID namespace is POD (the CRI default): its holder, started by
// the dead monitor, must outlive it (the reaper and then the new monitor
// hold its lifeline).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { goClientSkip, runGoClient } from './lib/goclient.mjs';
import { CH, V5, connect } from './lib/session.mjs';
import {
  SluicedInstance, criLogLines, destroyAll, monitorsUnder, parseCriLog, pidAlive, skipReason, sleep,
  waitLog, wsUrl,
} from './lib/sluiced.mjs';
import { pidOf, podState, reapersOf, waitFor } from './lib/podwatch.mjs';

const skip = skipReason();

// Numbers, 20 lines per 2 ms at most: fast, without a core spinning.
const COUNTER = "trap 'exit 7' TERM; i=0; while :; do echo $i; i=$((i+1)); " +
  '[ $((i % 20)) = 0 ] && sleep 0.002; done';
const TTY_COUNTER = 'i=0; while :; do echo t$i; i=$((i+1)); sleep 0.01; done';

// The numbers the log holds, in order, and where they stop running 0..N
// (bad, -1 if never): a gap, a repeat or a torn line is bad. Output a
// monitor took is kept in its journal until logged, so a kill at any
// instant may neither lose nor repeat a line.
function numbers(file, prefix = '') {
  const lines = criLogLines(parseCriLog(fs.readFileSync(file, 'utf8')))
    .map((l) => l.replace(/\r$/, ''));
  const nums = lines.map((l) => (l.startsWith(prefix) ? Number(l.slice(prefix.length)) : NaN));
  const bad = nums.findIndex((n, i) => n !== i);
  return { nums, lines, bad, count: bad < 0 ? nums.length : bad };
}

describe('a pod monitor killed mid-stream is replaced and adopts its containers', { skip }, () => {
  let sd;
  let pod;
  let runDir;
  let monPid;
  let newMon;
  let created; // CREATED, not started, when the monitor dies
  const c = {};
  const pids = {};
  before(async () => {
    sd = await SluicedInstance.start({ label: 'madopt' });
    const config = sd.podConfig('madopt', { hostNetwork: true });
    config.linux.security_context.namespace_options.pid = 'POD';
    const r = await sd.rt.RunPodSandbox({ config, runtime_handler: '' });
    sd.podIds.add(r.pod_sandbox_id);
    pod = { id: r.pod_sandbox_id, config };
    runDir = path.join(sd.runDir, 'pods', pod.id);
    c.counter = await sd.runContainer(pod, 'counter', { command: ['sh', '-c', COUNTER] });
    c.tty = await sd.runContainer(pod, 'tty', { command: ['sh', '-c', TTY_COUNTER], tty: true });
    for (const [k, id] of Object.entries(c)) pids[k] = await pidOf(sd, id);
    created = await sd.createContainer(pod, 'created',
      { command: ['sh', '-c', 'echo started; exec sleep 100000'] });
  });
  after(() => destroyAll(sd));

  test('kill -9 of the monitor mid-stream: same pids, RUNNING throughout, READY again', async () => {
    await waitLog(sd.logPath(pod, 'counter'), (r) => r.length >= 3000, 'counter wrote 3000 lines');
    monPid = Number(fs.readFileSync(path.join(runDir, 'mon.pid'), 'utf8'));
    const before = numbers(sd.logPath(pod, 'counter')).nums.length;
    // an ExecSync the dead monitor serves: it ends with an error naming that
    const inflight = sd.execSync(c.counter, ['sleep', '3']).then((r) => r, (e) => e);
    await sleep(300);
    const t0 = performance.now();
    process.kill(monPid, 'SIGKILL');
    let sawNotReady = false;
    let polls = 0;
    const ready = await waitFor(async () => {
      polls++;
      for (const k of Object.keys(c))
        assert.equal((await sd.status(c[k])).state, 'CONTAINER_RUNNING', `${k} at poll ${polls}`);
      const st = await podState(sd, pod.id);
      if (st === 'SANDBOX_NOTREADY') sawNotReady = true;
      return sawNotReady && st === 'SANDBOX_READY';
    }, 'pod READY again', t0);
    console.log(`pod READY again ${ready.toFixed(0)} ms after the kill (${polls} polls, every ` +
      `container RUNNING at each; ${before} counter lines logged before the kill)`);
    assert.ok(sawNotReady, 'NOTREADY while no monitor ran');
    const err = await inflight;
    assert.ok(err instanceof Error, `the exec in flight failed: ${JSON.stringify(err)}`);
    assert.match(err.message, /the pod monitor went away/);
    for (const k of Object.keys(c)) {
      assert.equal(await pidOf(sd, c[k]), pids[k], `${k}: the same process`);
      assert.ok(pidAlive(pids[k]), `${k} runs`);
    }
    newMon = Number(fs.readFileSync(path.join(runDir, 'mon.pid'), 'utf8'));
    assert.notEqual(newMon, monPid);
    assert.deepEqual(monitorsUnder(sd.root), [newMon], 'one monitor: the new one');
    assert.match(sd.proc.stderr, new RegExp(`msg="pod monitor replaced" pod=${pod.id} adopted=3`));
  });

  test('the CRI logs hold every line written across the kill', async () => {
    const file = sd.logPath(pod, 'counter');
    const at = numbers(file).nums.length;
    await waitLog(file, (r) => r.length >= at + 2000, 'the new monitor logs on');
    const { lines, bad, count } = numbers(file);
    assert.equal(bad, -1, `line ${bad} is ${JSON.stringify(lines.slice(bad - 2, bad + 3))}`);
    console.log(`counter log: 0..${count - 1}, no gap, no repeat`);
    const t = numbers(sd.logPath(pod, 'tty'), 't');
    assert.equal(t.bad, -1, `tty line ${t.bad} is ${t.nums[t.bad]}`);
    const tAt = t.count;
    await waitLog(sd.logPath(pod, 'tty'), (r) => r.length >= tAt + 20, 'tty log goes on');
    console.log(`tty log: t0..t${tAt - 1} at that point, going on`);
  });

  test('a container created before the death starts in the new monitor', async () => {
    assert.equal((await sd.status(created)).state, 'CONTAINER_CREATED');
    await sd.rt.StartContainer({ container_id: created });
    assert.equal((await sd.status(created)).state, 'CONTAINER_RUNNING');
    await waitLog(sd.logPath(pod, 'created'),
      (r) => criLogLines(r, 'stdout').includes('started'), 'its first line');
  });

  test('exec works in the new monitor', async () => {
    const r = await sd.execSync(c.counter, ['sh', '-c', 'echo $$ in; cat /proc/1/comm']);
    assert.equal(r.exit_code, 0);
    assert.match(r.stdout.toString(), /^\d+ in\nsluice-pause\n$/, 'pid 1 is the pod\'s holder');
  });

  test('attach to the adopted tty container: its output comes from the new monitor', async () => {
    const s = await connect(wsUrl(await sd.attachUrl(c.tty, { tty: true })), { protocols: [V5] });
    await s.waitFor((x) => /t\d+\r?\nt\d+/.test(x.text(CH.STDOUT)), 'two lines');
    const nums = s.text(CH.STDOUT).match(/t(\d+)/g).map((x) => Number(x.slice(1)));
    s.ws.close(1000);
    await s.waitClosed();
    const logged = numbers(sd.logPath(pod, 'tty'), 't').count;
    assert.ok(nums[0] > 0 && nums[0] <= logged + 5, `live lines (t${nums[0]}, ${logged} logged)`);
  });

  test('StopContainer gives the container\'s own exit code; the log is complete', async () => {
    await sd.rt.StopContainer({ container_id: c.counter, timeout: 10 });
    const s = await sd.status(c.counter);
    assert.deepEqual([s.state, s.exit_code], ['CONTAINER_EXITED', 7]);
    assert.ok(!pidAlive(pids.counter));
    const { nums, bad, count } = numbers(sd.logPath(pod, 'counter'));
    assert.equal(bad, -1, `line ${bad} is ${nums[bad]}`);
    console.log(`stopped: exit 7, log 0..${count - 1}`);
  });

  test('RemovePodSandbox leaves nothing', async () => {
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    assert.ok(!pidAlive(pids.tty));
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    assert.ok(!fs.existsSync(runDir));
    await waitFor(() => reapersOf(runDir).length === 0 && monitorsUnder(sd.root).length === 0,
      'reapers and monitors gone');
    assert.ok(!pidAlive(newMon));
    await sd.stop();
  });
});

// The monitor is killed again and again while the container writes as
// fast as busybox's seq goes (in stdio's 4 KiB writes, so lines are split
// across writes); the monitor, logging flat out, is between a read and its
// log write most of the time. Reading a pipe before its bytes are logged
// lost lines at nearly every kill; taking them only after the log write
// logged a read twice, and a kill inside the write tore a record. Now
// nothing may be lost, repeated or torn.
describe('a pod monitor killed again and again while its container writes flat out', { skip }, () => {
  const KILLS = 6;
  const GROWTH = 256 * 1024; // bytes logged between two kills
  let sd;
  let pod;
  let writer;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'mkills',
      args: ['--monitor-restart-max', String(KILLS + 1)] });
    pod = await sd.runPod('mkills', { hostNetwork: true });
    writer = await sd.runContainer(pod, 'writer', { command: ['seq', '0', '999999999'] });
  });
  after(() => destroyAll(sd));

  const monPid = () =>
    Number(fs.readFileSync(path.join(sd.runDir, 'pods', pod.id, 'mon.pid'), 'utf8'));
  const size = (file) => (fs.existsSync(file) ? fs.statSync(file).size : 0);

  // Stops the monitor at an instant its journal holds a chunk taken from
  // the pipe whose records it has not begun to write (no note yet: the
  // note's first word is zero), so the next monitor must log that chunk.
  async function stopHolding(mon) {
    const dir = path.join(sd.runDir, 'pods', pod.id, 'ctr', writer);
    const noted = () => {
      const note = fs.readFileSync(path.join(dir, 'journal.note'));
      return note.length >= 4 && note.readUInt32LE(0) !== 0;
    };
    for (let tries = 0; ; tries++) {
      process.kill(mon, 'SIGSTOP');
      if (size(path.join(dir, 'stdout.journal')) > 0 && !noted())
        return;
      process.kill(mon, 'SIGCONT');
      assert.ok(tries < 10000, 'the journal never held a chunk');
      await sleep(1);
    }
  }

  test(`${KILLS} kills of the monitor: the log holds every number, no gap`, async () => {
    const file = sd.logPath(pod, 'writer');
    const pid = await pidOf(sd, writer);
    for (let k = 0; k <= KILLS; k++) {
      const at = size(file);
      await waitFor(() => size(file) >= at + GROWTH, `step ${k}: logging`);
      if (k === KILLS)
        break;
      const mon = monPid();
      if (k % 2 === 0) // a stopped process is never inside a syscall: odd kills may tear a write
        await stopHolding(mon);
      process.kill(mon, 'SIGKILL');
      await waitFor(async () => monPid() !== mon && (await podState(sd, pod.id)) === 'SANDBOX_READY',
        `kill ${k}: adopted`);
    }
    assert.equal(await pidOf(sd, writer), pid, 'the same writer throughout');
    const recovered = [...fs.readFileSync(path.join(sd.stateDir, 'pods', pod.id, 'mon.log'), 'utf8')
      .matchAll(/bytes of stdout the last monitor took are logged now \((\d+) bytes of their/g)];
    const again = recovered.length;
    const torn = recovered.filter((m) => m[1] !== '0').length;
    assert.ok(again >= KILLS / 2,
      `${again} chunk(s) logged again after ${KILLS / 2} kills with an unlogged chunk in the journal`);
    await sd.rt.StopContainer({ container_id: writer, timeout: 0 });
    const { lines, bad, count } = numbers(file);
    assert.equal(bad, -1, `line ${bad}: ${JSON.stringify(lines.slice(bad - 2, bad + 3))} ` +
      `where ${bad} was due`);
    console.log(`${KILLS} kills: 0..${count - 1} logged (${(size(file) / 1048576).toFixed(1)} ` +
      `MiB) without a gap or a repeat; ${again} journaled chunk(s) logged by the next monitor, ` +
      `${torn} of them after cutting off records the killed one had begun to write`);
  });
});

// monitor-restart-max 1: the first death is adopted, the second within the
// minute is not; sluiced then lets go of the output fds it kept, so the
// pod is NOTREADY and a writer meets a pipe without reader (busybox's echo
// fails, its loop ends, exit 0), as without adoption (mon_death.test.mjs).
describe('a pod monitor that keeps dying is not replaced beyond monitor-restart-max', { skip }, () => {
  let sd;
  let pod;
  let talker;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'mrlim', args: ['--monitor-restart-max', '1'] });
    pod = await sd.runPod('mrlim', { hostNetwork: true });
    talker = await sd.runContainer(pod, 'talker',
      { command: ['sh', '-c', 'while echo tick; do sleep 0.05; done'] });
  });
  after(() => destroyAll(sd));

  const monPid = () =>
    Number(fs.readFileSync(path.join(sd.runDir, 'pods', pod.id, 'mon.pid'), 'utf8'));

  test('the first death is adopted, the second is not', async () => {
    const first = monPid();
    process.kill(first, 'SIGKILL');
    await waitFor(async () => monPid() !== first && (await podState(sd, pod.id)) === 'SANDBOX_READY',
      'adopted after the first death');
    assert.equal((await sd.status(talker)).state, 'CONTAINER_RUNNING');
    const second = monPid();
    const t0 = performance.now();
    process.kill(second, 'SIGKILL');
    const ms = await waitFor(async () => (await sd.status(talker)).state === 'CONTAINER_EXITED',
      'the talker EXITED after the second death', t0);
    console.log(`second death: the talker EXITED ${ms.toFixed(0)} ms after it`);
    assert.equal(await podState(sd, pod.id), 'SANDBOX_NOTREADY');
    const t = await sd.status(talker);
    assert.deepEqual([t.exit_code, t.reason], [0, 'Completed']);
    assert.match(sd.proc.stderr, new RegExp(
      `msg="pod monitor not replaced: restart limit reached" pod=${pod.id} monitor-restart-max=1`));
    assert.deepEqual(monitorsUnder(sd.root), [], 'no third monitor');
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    await sd.stop();
  });
});

// sluiced's duplicates are per sluiced: a restarted one asks the monitor
// for them again (`stdio` after it connects), so a later death is adopted
// with the output too. A monitor that dies while sluiced is down leaves
// pipes nobody holds: the next sluiced still adopts the container (same
// process, stoppable with its own code) but its output meanwhile is lost.
// A pod without a pod-wide PID namespace (CONTAINER mode).
describe('adoption across restarts of sluiced', { skip }, () => {
  let sd;
  let pod;
  let counter;
  let nolog;
  let pid;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'mrest' });
    pod = await sd.runPod('mrest', { hostNetwork: true });
    counter = await sd.runContainer(pod, 'counter', { command: ['sh', '-c', COUNTER] });
    pid = await pidOf(sd, counter);
    nolog = await sd.runContainer(pod, 'nolog',
      { command: ['sh', '-c', "trap 'exit 9' TERM; while :; do sleep 0.05; done"] });
  });
  after(() => destroyAll(sd));

  const monPid = () =>
    Number(fs.readFileSync(path.join(sd.runDir, 'pods', pod.id, 'mon.pid'), 'utf8'));

  test('a death after a restart of sluiced is adopted with the output', async () => {
    const file = sd.logPath(pod, 'counter');
    await waitLog(file, (r) => r.length >= 500, 'counter wrote 500 lines');
    await sd.restart();
    const at = numbers(file).nums.length; // the new sluiced asks for the fds once connected
    await waitLog(file, (r) => r.length >= at + 500, 'logging on');
    const first = monPid();
    process.kill(first, 'SIGKILL');
    await waitFor(async () => monPid() !== first && (await podState(sd, pod.id)) === 'SANDBOX_READY',
      'adopted');
    assert.equal(await pidOf(sd, counter), pid);
    const at2 = numbers(file).nums.length;
    await waitLog(file, (r) => r.length >= at2 + 1000, 'logging on after');
    const { nums, bad, count } = numbers(file);
    assert.equal(bad, -1, `line ${bad} is ${nums[bad]}`);
    console.log(`after a restart of sluiced and a monitor death: log 0..${count - 1}, no gap`);
  });

  test('a death while sluiced is down: adopted at its start, without the output meanwhile', async () => {
    const file = sd.logPath(pod, 'counter');
    await sd.kill();
    const mon = monPid();
    process.kill(mon, 'SIGKILL');
    await waitFor(() => !pidAlive(mon), 'the monitor gone');
    const logged = numbers(file);
    // a log that cannot be opened again (a directory in its place) does
    // not keep a container from being adopted
    const nologFile = sd.logPath(pod, 'nolog');
    fs.rmSync(nologFile, { force: true });
    fs.mkdirSync(nologFile);
    await sd.launch();
    await waitFor(async () => monPid() !== mon && (await podState(sd, pod.id)) === 'SANDBOX_READY',
      'adopted by the restarted sluiced');
    assert.equal((await sd.status(counter)).state, 'CONTAINER_RUNNING');
    assert.equal(await pidOf(sd, counter), pid);
    assert.equal(logged.bad, -1, 'what was logged before has no gap');
    assert.match(sd.proc.stderr, /msg="container adopted without its output: sluiced held no fds/);
    const r = await sd.execSync(counter, ['echo', 'here']);
    assert.equal(r.stdout.toString(), 'here\n');
    await sd.rt.StopContainer({ container_id: counter, timeout: 10 });
    const s = await sd.status(counter);
    assert.deepEqual([s.state, s.exit_code], ['CONTAINER_EXITED', 7]);
    const monLog = fs.readFileSync(path.join(sd.stateDir, 'pods', pod.id, 'mon.log'), 'utf8');
    assert.match(monLog, new RegExp(`container ${nolog}: adopted without its CRI log: .*Is a directory`));
    await sd.rt.StopContainer({ container_id: nolog, timeout: 10 });
    assert.equal((await sd.status(nolog)).exit_code, 9, 'stopped by the new monitor');
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    await waitFor(() => monitorsUnder(sd.root).length === 0, 'no monitor left');
    await sd.stop();
  });
});

// A pod with a network of its own: the new monitor joins it (--netns) and
// serves port-forward there.
describe('port-forward through the monitor that adopted the pod', {
  skip: skipReason({ cni: true }) || goClientSkip(),
}, () => {
  const PORT = 8080;
  let sd;
  let pod;
  let echo;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'madpf',
      cni: { bridge: 'slt-madp', subnet: '10.89.77.0/24' } });
    pod = await sd.runPod('madpf');
    echo = await sd.runContainer(pod, 'echo',
      { command: ['nc', '-ll', '-p', String(PORT), '-e', 'cat'] });
    await waitFor(async () => (await sd.execSync(echo, ['netstat', '-ltn'])).stdout.toString()
      .includes(`:${PORT}`), 'nc listening');
  });
  after(() => destroyAll(sd));

  test('kill -9 of the monitor, then port-forward into the pod', async () => {
    const monFile = path.join(sd.runDir, 'pods', pod.id, 'mon.pid');
    const first = Number(fs.readFileSync(monFile, 'utf8'));
    process.kill(first, 'SIGKILL');
    await waitFor(async () => Number(fs.readFileSync(monFile, 'utf8')) !== first &&
      (await podState(sd, pod.id)) === 'SANDBOX_READY', 'adopted');
    const r = await runGoClient(['pf', await sd.portForwardUrl(pod.id), String(PORT)],
      { input: 'through the new monitor\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), 'through the new monitor\n');
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    await sd.stop();
  });
});
