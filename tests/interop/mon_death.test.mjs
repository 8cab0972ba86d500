// A pod monitor killed with SIGKILL: sluiced notices (a pidfd on the
// monitor) and reports the truth. The pod is NOTREADY; a container whose
// process still runs (checked here from /proc) stays RUNNING, one that ended
// when its output lost its reader (busybox's echo fails, so its loop ends
// and the shell exits 0) is EXITED with the code the pod's reaper
// (sluice-reaper, the monitor's parent, which outlives it) recorded, and so
// is one that ends later (SIGTERM → exit 7); the same after a restart of
// sluiced; exec is refused with the reason; RemoveContainer and
// StopPodSandbox kill what is left (the processes are gone when they
// answer, the stopped container EXITED 137) and RemovePodSandbox leaves
// nothing behind. This is what happens when no new monitor may adopt the
// containers: monitor-restart-max 0 here (mon_adopt.test.mjs: the default,
// a new monitor adopts them); sluiced says so in its log.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SluicedInstance, destroyAll, pidAlive, skipReason, sleep } from './lib/sluiced.mjs';
import { pidOf, podState, reapersOf, waitFor } from './lib/podwatch.mjs';

const skip = skipReason();

describe('a pod monitor killed with SIGKILL', { skip }, () => {
  let sd;
  let pod;
  const c = {};
  const pids = {};
  before(async () => {
    sd = await SluicedInstance.start({ label: 'mdeath', args: ['--monitor-restart-max', '0'] });
    pod = await sd.runPod('mdeath', { hostNetwork: true });
    c.sleeper = await sd.runContainer(pod, 'sleeper', { command: ['sleep', '100000'] });
    c.spare = await sd.runContainer(pod, 'spare', { command: ['sleep', '100001'] });
    c.talker = await sd.runContainer(pod, 'talker',
      { command: ['sh', '-c', 'while echo tick; do sleep 0.05; done'] });
    c.trapper = await sd.runContainer(pod, 'trapper',
      { command: ['sh', '-c', "trap 'exit 7' TERM; while :; do sleep 0.05; done"] });
    for (const [k, id] of Object.entries(c)) pids[k] = await pidOf(sd, id);
  });
  after(() => destroyAll(sd));

  test('the pod is NOTREADY at once; a live container stays RUNNING, a dead one EXITED with its code',
    async () => {
      const monPid = Number(fs.readFileSync(path.join(sd.runDir, 'pods', pod.id, 'mon.pid'), 'utf8'));
      assert.ok(pidAlive(monPid));
      const ppid = Number(fs.readFileSync(`/proc/${monPid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      assert.deepEqual(reapersOf(path.join(sd.runDir, 'pods', pod.id)), [ppid],
        'the monitor\'s parent is the pod\'s reaper');
      const t0 = performance.now();
      process.kill(monPid, 'SIGKILL');
      const notReady = await waitFor(async () => (await podState(sd, pod.id)) === 'SANDBOX_NOTREADY',
        'pod NOTREADY', t0);
      const exited = await waitFor(async () => (await sd.status(c.talker)).state === 'CONTAINER_EXITED',
        'talker EXITED', t0);
      console.log(`pod NOTREADY ${notReady.toFixed(0)} ms after the kill, ` +
        `the talker EXITED ${exited.toFixed(0)} ms after the kill`);
      assert.ok(!pidAlive(pids.talker), 'the talker is really gone');
      const t = await sd.status(c.talker);
      assert.deepEqual([t.exit_code, t.reason], [0, 'Completed']);
      assert.match(t.message, /the pod monitor died; the pod's reaper kept the status/);
      for (const k of ['sleeper', 'spare', 'trapper']) {
        assert.ok(pidAlive(pids[k]), `${k} still runs`);
        assert.equal((await sd.status(c[k])).state, 'CONTAINER_RUNNING', k);
      }
      const listed = await sd.rt.ListPodSandbox({});
      assert.equal(listed.items.find((p) => p.id === pod.id).state, 'SANDBOX_NOTREADY');
      assert.match(sd.proc.stderr, new RegExp(`msg="pod monitor died" pod=${pod.id} pid=${monPid}`));
      assert.match(sd.proc.stderr, new RegExp(
        `msg="pod monitor not replaced: restart limit reached" pod=${pod.id} monitor-restart-max=0`));
    });

  test('a container that ends after its monitor died has its true exit code', async () => {
    const t0 = performance.now();
    process.kill(pids.trapper, 'SIGTERM'); // as a user's kill would
    const ms = await waitFor(async () => (await sd.status(c.trapper)).state === 'CONTAINER_EXITED',
      'trapper EXITED', t0);
    console.log(`the trapper EXITED ${ms.toFixed(0)} ms after its SIGTERM`);
    const t = await sd.status(c.trapper);
    assert.deepEqual([t.exit_code, t.reason], [7, 'Error']);
    assert.ok(!pidAlive(pids.trapper));
  });

  test('exec and new containers are refused with the reason', async () => {
    await assert.rejects(sd.execSync(c.sleeper, ['true']), /monitor of pod .* died/);
    await assert.rejects(sd.createContainer(pod, 'late', { command: ['true'] }), /is not ready/);
  });

  test('after a restart of sluiced the states are the same', async () => {
    await sd.restart();
    assert.equal(await podState(sd, pod.id), 'SANDBOX_NOTREADY');
    assert.equal((await sd.status(c.sleeper)).state, 'CONTAINER_RUNNING');
    assert.equal((await sd.status(c.talker)).exit_code, 0);
    assert.equal((await sd.status(c.trapper)).exit_code, 7);
  });

  test('RemoveContainer and StopPodSandbox kill what the monitor left', async () => {
    await sd.rt.RemoveContainer({ container_id: c.spare });
    assert.ok(!pidAlive(pids.spare), 'spare killed by RemoveContainer');
    const listed = await sd.rt.ListContainers({ filter: { pod_sandbox_id: pod.id } });
    assert.deepEqual(listed.containers.map((x) => x.id).sort(),
      [c.sleeper, c.talker, c.trapper].sort());
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
    assert.ok(!pidAlive(pids.sleeper), 'sleeper killed by StopPodSandbox');
    const s = await sd.status(c.sleeper);
    assert.deepEqual([s.state, s.exit_code], ['CONTAINER_EXITED', 137]);
    assert.match(s.message, /killed after the pod monitor died/);
  });

  test('RemovePodSandbox, then sluiced stops with nothing left behind', async () => {
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
    assert.ok(!fs.existsSync(path.join(sd.runDir, 'pods', pod.id)));
    await waitFor(() => reapersOf(path.join(sd.runDir, 'pods', pod.id)).length === 0,
      'the reaper exits once its last child is gone');
    await sd.stop();
  });
});
