// Watching pods and containers from outside while their monitor dies and
// is replaced (mon_death, mon_adopt): the init's pid, the pod's state, the
// monitor's reapers, and polling with a deadline.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sleep } from './sluiced.mjs';

export const WAIT_MS = 10000;

// The container's init pid, from verbose ContainerStatus.
export async function pidOf(sd, ctr) {
  const { info } = await sd.rt.ContainerStatus({ container_id: ctr, verbose: true });
  return JSON.parse(info.info).pid;
}

// Polls pred; resolves the ms since t0 when it holds.
export async function waitFor(pred, what, t0 = performance.now(), ms = WAIT_MS) {
  for (;;) {
    const v = await pred();
    if (v) return performance.now() - t0;
    if (performance.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

// The sluice-reaper processes whose command line names dir.
export function reapersOf(dir) {
  return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((e) => {
    try {
      const argv = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      return argv[0] === 'sluice-reaper' && argv[1] === dir;
    } catch {
      return false;
    }
  }).map(Number);
}

export async function podState(sd, id) {
  return (await sd.rt.PodSandboxStatus({ pod_sandbox_id: id })).status.state;
}
