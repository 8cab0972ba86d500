// Subprotocol negotiation and per-version framing (protocol notes §6.1,
// §6.2, §5.3), driven by the `ws` package.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import {
  CH, SUCCESS_JSON, UpgradeRefused, V1, V1B64, V4, V4B64, V5,
  connect, failureJson, failureText, runSession,
} from './lib/session.mjs';

const fx = serverFixture();

// What each accepted choice looks like on the wire.
const CHOICES = [
  { label: V5, offer: [V5], chosen: V5, json: true, base64: false },
  { label: V4, offer: [V4], chosen: V4, json: true, base64: false },
  { label: V4B64, offer: [V4B64], chosen: V4B64, json: true, base64: true },
  { label: V1, offer: [V1], chosen: V1, json: false, base64: false },
  { label: V1B64, offer: [V1B64], chosen: V1B64, json: false, base64: true },
  { label: 'no Sec-WebSocket-Protocol', offer: undefined, chosen: '', json: false, base64: false },
];

// Bytes that are not a multiple of 3 and not ASCII, to exercise base64.
const OUT = Buffer.concat([Buffer.from('out\n'), Buffer.from([0xff, 0x00, 0x80])]);
const ERR = Buffer.from('err\n');

function script(code) {
  return `printf 'out\\n\\377\\000\\200'; printf 'err\\n' >&2; exit ${code}`;
}

function expectedStatus(c, code) {
  if (c.json) return code === 0 ? SUCCESS_JSON : failureJson(code);
  return code === 0 ? null : failureText(code);
}

function checkFraming(s, c) {
  for (const m of s.messages) {
    assert.equal(m.isBinary, !c.base64, `frame type of ${JSON.stringify(m.raw.toString('latin1'))}`);
    if (c.base64) {
      // '0'+channel, then padded standard base64 of the payload.
      const text = m.raw.toString('latin1');
      assert.equal(text, String.fromCharCode(48 + m.channel) + m.data.toString('base64'));
      assert.equal((text.length - 1) % 4, 0, `padded base64: ${text}`);
    } else {
      assert.equal(m.raw[0], m.channel);
    }
  }
}

describe('each accepted subprotocol', () => {
  for (const c of CHOICES) {
    for (const code of [0, 3]) {
      test(`${c.label}, exit ${code}`, async () => {
        const url = await fx.h.execUrl({ cmd: ['sh', '-c', script(code)], stdout: 1, stderr: 1 });
        const s = await runSession(url, { protocols: c.offer });
        assert.equal(s.protocol, c.chosen);
        assert.equal(s.upgradeHeaders['sec-websocket-protocol'], c.chosen || undefined);

        // The "connected" message: empty, on stdout (the lowest writable).
        const first = s.messages[0];
        assert.equal(first.channel, CH.STDOUT);
        assert.equal(first.data.length, 0);
        assert.equal(first.rawLength, 1);

        checkFraming(s, c);
        assert.deepEqual(s.channel(CH.STDOUT), OUT);
        assert.deepEqual(s.channel(CH.STDERR), ERR);
        assert.deepEqual([...s.byChannel.keys()].filter((k) => k > CH.ERROR), []);

        const status = s.messages.filter((m) => m.channel === CH.ERROR);
        const want = expectedStatus(c, code);
        if (want === null) {
          assert.equal(status.length, 0, `no status message on success: ${s.summary()}`);
        } else {
          assert.equal(status.length, 1, s.summary());
          assert.equal(status[0].data.toString('utf8'), want);
          assert.equal(s.messages.at(-1), status[0], 'the status is the last message');
        }
        assert.equal(s.closeInfo.code, 1000);
      });
    }
  }
});

describe('first message goes on the lowest writable channel', () => {
  for (const c of [CHOICES[0], CHOICES[4]]) {
    test(`${c.label}: stderr only → empty message on stderr`, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'printf e >&2'], stderr: 1 });
      const s = await runSession(url, { protocols: c.offer });
      assert.equal(s.messages[0].channel, CH.STDERR);
      assert.equal(s.messages[0].rawLength, 1);
      checkFraming(s, c);
      assert.equal(s.text(CH.STDERR), 'e');
      assert.equal(s.text(CH.ERROR), c.json ? SUCCESS_JSON : '');
      assert.equal(s.closeInfo.code, 1000);
    });

    test(`${c.label}: stdin only → empty message on the status channel`, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'exit 5'], stdin: 1 });
      const s = await runSession(url, { protocols: c.offer });
      assert.equal(s.messages[0].channel, CH.ERROR);
      assert.equal(s.messages[0].rawLength, 1);
      checkFraming(s, c);
      const rest = s.messages.slice(1);
      assert.equal(rest.length, 1, s.summary());
      assert.equal(rest[0].channel, CH.ERROR);
      assert.equal(rest[0].data.toString(), c.json ? failureJson(5) : failureText(5));
      assert.equal(s.closeInfo.code, 1000);
    });
  }
});

describe('selection follows the client order', () => {
  const cases = [
    { offer: [V4, V5], want: V4 },
    { offer: [V5, V4], want: V5 },
    { offer: [V1B64, V5, V4], want: V1B64 },
    { offer: ['v3.channel.k8s.io', 'v2.channel.k8s.io', V4B64, V1], want: V4B64 },
  ];
  for (const { offer, want } of cases) {
    test(`[${offer.join(', ')}] → ${want}`, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'echo hi'], stdout: 1 });
      const s = await runSession(url, { protocols: offer });
      assert.equal(s.protocol, want);
      assert.equal(s.text(CH.STDOUT), 'hi\n');
      assert.equal(s.closeInfo.code, 1000);
    });
  }
});

describe('no acceptable subprotocol → 403', () => {
  const offers = [
    ['v3.channel.k8s.io'],
    ['v2.channel.k8s.io', 'v5.base64.channel.k8s.io'],
  ];
  for (const offer of offers) {
    test(`[${offer.join(', ')}]`, async () => {
      const url = await fx.h.execUrl({ cmd: ['sh', '-c', 'echo never'], stdout: 1 });
      await assert.rejects(connect(url, { protocols: offer }), (e) => {
        assert.ok(e instanceof UpgradeRefused, String(e));
        assert.equal(e.status, 403);
        assert.equal(e.body, '');
        return true;
      });
      // The refused request never started the command.
      const st = await fx.h.stats();
      assert.equal(st.running, 0);
    });
  }
});

stopTest(fx);
