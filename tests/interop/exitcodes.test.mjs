// Exit codes in the v4/v5 Status (protocol notes §5.3), read raw with
// `ws` and through @kubernetes/client-node's Exec statusCallback.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { Collector, kubeExec } from './lib/kube.mjs';
import { CH, SUCCESS_JSON, V4, V5, failureJson, runSession } from './lib/session.mjs';

const fx = serverFixture();
const CODES = [0, 1, 42, 255];

function cmdFor(code) {
  return ['sh', '-c', `echo code=${code}; exit ${code}`];
}

describe('raw ws: Status JSON per exit code', () => {
  for (const proto of [V5, V4]) {
    for (const code of CODES) {
      test(`${proto}: exit ${code}`, async () => {
        const url = await fx.h.execUrl({ cmd: cmdFor(code), stdout: 1 });
        const s = await runSession(url, { protocols: [proto] });
        assert.equal(s.protocol, proto);
        assert.equal(s.text(CH.STDOUT), `code=${code}\n`);
        const st = s.messages.filter((m) => m.channel === CH.ERROR);
        assert.equal(st.length, 1, s.summary());
        const text = st[0].data.toString('utf8');
        assert.equal(text, code === 0 ? SUCCESS_JSON : failureJson(code));
        // And what client-go's v4 decoder would extract from it.
        const j = JSON.parse(text);
        if (code === 0) {
          assert.equal(j.status, 'Success');
        } else {
          assert.equal(j.reason, 'NonZeroExitCode');
          const cause = j.details.causes.find((c) => c.reason === 'ExitCode');
          assert.equal(Number.parseInt(cause.message, 10), code);
        }
        assert.equal(s.closeInfo.code, 1000);
      });
    }
  }
});

describe('@kubernetes/client-node Exec: statusCallback', () => {
  for (const code of CODES) {
    test(`exit ${code}`, async () => {
      const url = await fx.h.execUrl({ cmd: cmdFor(code), stdout: 1, stderr: 1 });
      const stdout = new Collector();
      const stderr = new Collector();
      const r = await kubeExec(url, { stdout, stderr, command: ['true'] });
      // client-node offers v5 first; the kube path rode in the query.
      assert.equal(r.dialed.protocols[0], V5);
      assert.match(r.dialed.uri, /\/exec\/[^/?]+\?x=\/api\/v1\/namespaces\/default\/pods\/pod\/exec\?/);
      assert.equal(r.protocol, V5);
      assert.equal(stdout.text(), `code=${code}\n`);
      assert.equal(stderr.text(), '');
      assert.equal(r.statuses.length, 1);
      if (code === 0) {
        assert.deepEqual(r.status, { metadata: {}, status: 'Success' });
      } else {
        assert.deepEqual(r.status, {
          metadata: {},
          status: 'Failure',
          message: `command terminated with non-zero exit code: exit status ${code}`,
          reason: 'NonZeroExitCode',
          details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
        });
      }
      assert.equal(r.closeCode, 1000);
    });
  }

  test('a signal-killed command reports 128+signal (SIGKILL → 137)', async () => {
    const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'echo bye; kill -9 $$'], stdout: 1 });
    const stdout = new Collector();
    const r = await kubeExec(url, { stdout });
    assert.equal(stdout.text(), 'bye\n');
    assert.equal(r.status.reason, 'NonZeroExitCode');
    assert.deepEqual(r.status.details.causes, [{ reason: 'ExitCode', message: '137' }]);
    assert.equal(r.closeCode, 1000);
  });
});

stopTest(fx);
