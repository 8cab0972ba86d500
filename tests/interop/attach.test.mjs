// Attach over WebSocket: hostd's --container / --tty-container targets
// (each session runs the container's command), with `ws` and with
// client-node's Attach.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { sleep } from './lib/hostd.mjs';
import { Collector, kubeExec } from './lib/kube.mjs';
import { CH, V1, V5, failureJson, runSession } from './lib/session.mjs';

const fx = serverFixture([
  '--container', 'greeter=read l; echo "attached:$l"; echo err >&2; exit 7',
  '--tty-container', 'term=while read x; do echo "size=$(stty size)"; done; echo done',
]);

const NOT_FOUND_MSG = 'Internal error occurred: error attaching to container: container not found';
const NOT_FOUND_JSON = '{"metadata":{},"status":"Failure","message":"' + NOT_FOUND_MSG +
  '","reason":"InternalError","details":{"causes":[{"message":' +
  '"error attaching to container: container not found"}]},"code":500}';

describe('ws', () => {
  test('v5 attach: stdin in, stdout and stderr out, exit status', async () => {
    const url = await fx.h.attachUrl({ container: 'greeter', stdin: 1, stdout: 1, stderr: 1 });
    assert.match(url, /\/attach\/[^/]+$/);
    const s = await runSession(url, { protocols: [V5] }, async (ss) => ss.send(CH.STDIN, 'hi\n'));
    assert.equal(s.messages[0].channel, CH.STDOUT);
    assert.equal(s.messages[0].data.length, 0);
    assert.equal(s.text(CH.STDOUT), 'attached:hi\n');
    assert.equal(s.text(CH.STDERR), 'err\n');
    assert.equal(s.text(CH.ERROR), failureJson(7));
    assert.equal(s.closeInfo.code, 1000);
  });

  for (const [proto, want] of [[V5, NOT_FOUND_JSON], [V1, NOT_FOUND_MSG]]) {
    test(`${proto}: unknown container → InternalError status`, async () => {
      const url = await fx.h.attachUrl({ container: 'nope', stdout: 1 });
      const s = await runSession(url, { protocols: [proto] });
      assert.equal(s.text(CH.STDOUT), '');
      assert.equal(s.text(CH.ERROR), want);
      assert.equal(s.closeInfo.code, 1000);
    });
  }

  test('an exec token does not open /attach, nor an attach token /exec', async () => {
    const url = await fx.h.attachUrl({ container: 'greeter', stdout: 1 });
    await assert.rejects(runSession(url.replace('/attach/', '/exec/'), { protocols: [V5] }),
      (e) => e.status === 404);
  });
});

describe('@kubernetes/client-node Attach', () => {
  test('stdin stream in, stdout and stderr out', async () => {
    const url = await fx.h.attachUrl({ container: 'greeter', stdin: 1, stdout: 1, stderr: 1 });
    const stdin = new PassThrough();
    const stdout = new Collector();
    const stderr = new Collector();
    const r = await kubeExec(url, { attach: true, stdout, stderr, stdin,
      onOpen: async () => stdin.write('there\n') });
    assert.ok(r.dialed.uri.includes('?x=/api/v1/namespaces/default/pods/pod/attach?'), r.dialed.uri);
    assert.equal(stdout.text(), 'attached:there\n');
    assert.equal(stderr.text(), 'err\n');
    assert.equal(r.closeCode, 1000);
  });

  test('tty container with a resizable stdout', async () => {
    const url = await fx.h.attachUrl({ container: 'term', tty: 1, stdin: 1, stdout: 1 });
    const stdout = new Collector();
    stdout.columns = 132;
    stdout.rows = 43;
    const stdin = new PassThrough();
    const r = await kubeExec(url, { attach: true, stdout, stdin, tty: true,
      onOpen: async () => {
        await sleep(50); // the initial size goes out first
        stdin.write('a\n');
        const deadline = Date.now() + 10000;
        while (!/size=\d+ \d+\r\n/.test(stdout.text()) && Date.now() < deadline) await sleep(5);
        stdin.end(); // v5 CLOSE: the server types ^D
      } });
    assert.match(stdout.text(), /size=43 132\r\n/);
    assert.match(stdout.text(), /done\r\n$/);
    assert.equal(r.closeCode, 1000);
  });
});

stopTest(fx);
