// sluice-kube keeps a pool of CRI connections; sluiced closes one that sat
// idle for grpc-idle-timeout-ms (GOAWAY, then close). The next kubectl
// call must not get that dead connection ("ServiceUnavailable ... closed
// the connection (Broken pipe)", seen once the kube front idled over 5 min
// in tty_size): sluice-kube drops pooled connections the runtime closed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeFront, kubeSkipReason, runPodRetry, sleep } from './lib/kubefront.mjs';
import { SluicedInstance, skipReason } from './lib/sluiced.mjs';

const NS = 'sluice-test';
const IDLE_MS = 1000;

describe('sluice-kube after sluiced closed its idle CRI connections',
  { skip: skipReason() || kubeSkipReason(), timeout: 120000 }, () => {
    let sd;
    let kf;

    before(async () => {
      sd = await SluicedInstance.start({ label: 'kidle',
        args: ['--grpc-idle-timeout-ms', String(IDLE_MS)] });
      const pod = await runPodRetry(sd, 'idle', { hostNetwork: true });
      await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
      kf = await KubeFront.start({ endpoint: sd.endpoint });
    }, { timeout: 60000 });

    after(async () => {
      if (kf) await kf.stop();
      if (sd) await sd.stop();
    }, { timeout: 60000 });

    test('kubectl exec works before and after the idle timeout', async () => {
      for (let round = 0; round < 3; round++) {
        const k = await kf.kubectl(['-n', NS, 'exec', 'idle', '--', 'echo', `round${round}`]);
        assert.equal(k.code, 0, `round ${round}: ${k.stderr}`);
        assert.equal(k.stdout.toString(), `round${round}\n`);
        await sleep(IDLE_MS * 3); // sluiced closes the pooled connection meanwhile
      }
    });
  });
