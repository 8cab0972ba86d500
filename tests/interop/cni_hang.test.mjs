// A CNI plugin that hangs: RunPodSandbox fails at cni-plugin-timeout-ms
// with an error naming the plugin and the key, the plugin and the child it
// left in the background are killed and reaped, and sluiced answers other
// calls all along (a second grpc-js client calls Version every 10 ms) and
// afterwards (a host-network pod runs).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import {
  busyboxImageTar, CNI_BIN_DIR, destroyAll, pidAlive, SluicedInstance, skipReason, sleep,
} from './lib/sluiced.mjs';

const TIMEOUT_MS = 1500;
const PLUGIN = 'sl-hang-plugin';
// A Version call that waited for the plugin would take TIMEOUT_MS or more;
// the loaded shared machine alone gives up to a few hundred ms.
const VERSION_BOUND_MS = 1000;

describe('a hanging CNI plugin', { skip: skipReason() }, () => {
  let sd;
  let probe;
  let pidFile;

  before(async () => {
    sd = new SluicedInstance({
      label: 'cnihg',
      args: ['--cni-plugin-timeout-ms', String(TIMEOUT_MS)],
    });
    const bin = path.join(sd.root, 'cni-bin');
    fs.mkdirSync(bin);
    pidFile = path.join(sd.root, 'plugin.pids');
    // it leaves a child in the background (holding its stdout) and hangs,
    // for ADD and DEL alike
    fs.writeFileSync(path.join(bin, PLUGIN),
      `#!/bin/sh\nsleep 600 &\necho $! >> ${pidFile}\necho $$ >> ${pidFile}\nexec sleep 600\n`,
      { mode: 0o755 });
    fs.writeFileSync(path.join(sd.cniDir, '10-hang.conflist'), JSON.stringify({
      cniVersion: '1.0.0', name: 'sl-hang-net', plugins: [{ type: PLUGIN }],
    }));
    sd.opts.args.push('--cni-bin-dir', `${bin}:${CNI_BIN_DIR}`);
    fs.copyFileSync(busyboxImageTar(), path.join(sd.importDir, 'busybox-oci.tar'));
    try {
      await sd.launch();
      probe = await connectCri(sd.endpoint, { ownConnection: true });
    } catch (e) {
      await destroyAll(sd);
      throw e;
    }
  }, { timeout: 120000 });

  after(async () => {
    probe?.close();
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 120000 });

  test('RunPodSandbox fails at cni-plugin-timeout-ms naming the plugin; Version is answered meanwhile', { timeout: 120000 }, async (t) => {
    const lat = [];
    let running = true;
    const versions = (async () => {
      while (running) {
        const t0 = process.hrtime.bigint();
        await probe.runtime.Version({ version: 'v1' });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        lat.push(ms);
        await sleep(Math.max(0, 10 - ms));
      }
    })();
    const t0 = Date.now();
    const err = await sd.rt.RunPodSandbox({ config: sd.podConfig('hang') }, { deadlineMs: 60000 })
      .then(() => null, (e) => e);
    const took = Date.now() - t0;
    running = false;
    await versions;
    assert.ok(err, 'RunPodSandbox succeeded with a plugin that never answers');
    assert.match(err.details,
      new RegExp(`CNI plugin ${PLUGIN} \\(ADD\\) did not finish within ${TIMEOUT_MS} ms \\(cni-plugin-timeout-ms\\): killed`));
    assert.ok(took >= TIMEOUT_MS, `answered after ${took} ms`);
    const max = Math.max(...lat);
    t.diagnostic(`RunPodSandbox failed after ${took} ms: ${err.details}; ${lat.length} Version calls ` +
      `meanwhile, max ${max.toFixed(1)} ms`);
    assert.ok(lat.length >= TIMEOUT_MS / 100, `${lat.length} Version calls in ${took} ms`);
    assert.ok(max < VERSION_BOUND_MS, `a Version call took ${max} ms`);

    // ADD and the DEL that cleans up after it each ran the plugin: every
    // process they made is killed and reaped (no zombie either)
    const pids = fs.readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
    assert.ok(pids.length >= 2, pids.join(' '));
    let alive = pids;
    for (let i = 0; i < 50 && alive.length; i++) {
      await sleep(100);
      alive = pids.filter(pidAlive);
    }
    assert.deepEqual(alive, [], `plugin processes left: ${alive.join(' ')}`);
    assert.deepEqual((await sd.rt.ListPodSandbox({})).items, []);
  });

  test('sluiced keeps serving: a host-network pod runs a container', { timeout: 120000 }, async () => {
    sd.assertAlive();
    const pod = await sd.runPod('after', { hostNetwork: true });
    const c = await sd.runContainer(pod, 'c', { command: ['sleep', '60'] });
    const out = await sd.execSync(c, ['id', '-u']);
    assert.equal(out.stdout.toString().trim(), '0');
  });
});
