// TTY sessions: resize stream (protocol notes §5.4), merged output (§5.5),
// with `ws` and with client-node's terminal-size queue.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { sleep } from './lib/hostd.mjs';
import { Collector, kubeExec } from './lib/kube.mjs';
import { CH, SUCCESS_JSON, V5, connect } from './lib/session.mjs';

const fx = serverFixture();

// Prints the terminal size for every line read; "done" at EOF.
const SIZE_LOOP = ['sh', '-c', 'while read x; do echo "size=$(stty size)"; done; echo done'];
const TTY = { cmd: SIZE_LOOP, tty: 1, stdin: 1, stdout: 1 };

function sizes(text) {
  return [...text.matchAll(/size=(\d+ \d+)\r\n/g)].map((m) => m[1]);
}

// Sends a line and waits for the n-th "size=R C" answer; returns it.
async function askSize(s, line, n) {
  s.send(CH.STDIN, `${line}\n`);
  await s.waitFor((x) => sizes(x.text(CH.STDOUT)).length >= n, `size answer #${n}`);
  return sizes(s.text(CH.STDOUT))[n - 1];
}

async function endTty(s) {
  s.sendClose(CH.STDIN); // the server types ^D on the terminal
  await s.waitClosed();
  assert.match(s.text(CH.STDOUT), /done\r\n$/);
  assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  assert.equal(s.closeInfo.code, 1000);
  assert.equal(s.byChannel.has(CH.STDERR), false, 'no stderr channel with a tty');
}

describe('ws: resize', () => {
  test('resize 100x30 → "30 100"; a later resize 120x40 → "40 120"', async () => {
    const s = await connect(await fx.h.execUrl(TTY), { protocols: [V5] });
    s.resize(100, 30);
    assert.equal(await askSize(s, 'a', 1), '30 100');
    s.resize(120, 40);
    assert.equal(await askSize(s, 'b', 2), '40 120');
    await endTty(s);
    // The terminal echoed what was typed.
    assert.match(s.text(CH.STDOUT), /^a\r\nsize=30 100\r\nb\r\nsize=40 120\r\n/);
  });

  test('without any resize the terminal is 80x24', async () => {
    const s = await connect(await fx.h.execUrl(TTY), { protocols: [V5] });
    assert.equal(await askSize(s, 'x', 1), '24 80');
    await endTty(s);
  });

  test('the resize channel is a JSON stream: several objects per message, one split in two',
    async () => {
      const s = await connect(await fx.h.execUrl(TTY), { protocols: [V5] });
      s.send(CH.RESIZE, '{"Width":90,"Height":20}\n{"Width":91,"Height":21}\n');
      assert.equal(await askSize(s, 'a', 1), '21 91');
      s.send(CH.RESIZE, '{"Width":9');
      s.send(CH.RESIZE, '2,"Height":22}\n');
      assert.equal(await askSize(s, 'b', 2), '22 92');
      await endTty(s);
    });

  // containerd's handleResizing skips sizes with Height < 1 or Width < 1
  // (it never sets a 0x0 window); a {} object decodes to 0x0 in Go.
  test('a size with a zero width or height is ignored', async () => {
    const s = await connect(await fx.h.execUrl(TTY), { protocols: [V5] });
    s.resize(100, 30);
    assert.equal(await askSize(s, 'a', 1), '30 100');
    s.send(CH.RESIZE, '{"Width":0,"Height":0}{"Width":50,"Height":0}{"Width":0,"Height":10}{}');
    assert.equal(await askSize(s, 'b', 2), '30 100');
    await endTty(s);
  });

  test('stderr of a tty command arrives merged on stdout; admin refuses tty+stderr', async () => {
    const s = await connect(await fx.h.execUrl({
      cmd: ['sh', '-c', 'echo to-stderr >&2; echo to-stdout'], tty: 1, stdout: 1,
    }), { protocols: [V5] });
    await s.waitClosed();
    assert.equal(s.text(CH.STDOUT), 'to-stderr\r\nto-stdout\r\n');
    assert.equal(s.byChannel.has(CH.STDERR), false);
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);

    const r = await fx.h.execRaw({ cmd: ['true'], tty: 1, stdout: 1, stderr: 1 });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'tty and stderr cannot both be true' });
  });
});

// A stdout that client-node treats as a terminal (isResizable: rows,
// columns and on()); emitting 'resize' sends the new size.
class FakeTerminal extends Collector {
  constructor(columns, rows) {
    super();
    this.columns = columns;
    this.rows = rows;
  }
}

async function waitText(c, re, what) {
  const deadline = Date.now() + 10000;
  while (!re.test(c.text())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(c.text())}`);
    await sleep(5);
  }
}

describe('@kubernetes/client-node Exec with tty', () => {
  // client-node's TerminalSizeQueue sends JSON.stringify({height, width}):
  // lower-case keys. Go's encoding/json matches field names
  // case-insensitively, so a kubelet applies this size.
  test('its terminal-size queue (lower-case JSON keys) sets the size; a resize event too',
    async () => {
      const url = await fx.h.execUrl(TTY);
      const stdout = new FakeTerminal(100, 30);
      const stdin = new PassThrough();
      const r = await kubeExec(url, {
        stdout,
        stdin,
        tty: true,
        onOpen: async () => {
          await sleep(50); // the initial size goes out before this line
          stdin.write('a\n');
          await waitText(stdout, /size=\d+ \d+\r\n/, 'first size');
          stdout.columns = 120;
          stdout.rows = 40;
          stdout.emit('resize');
          await sleep(50);
          stdin.write('b\n');
          await waitText(stdout, /size=.*\r\n[^]*size=\d+ \d+\r\n/, 'second size');
          stdin.end();
        },
      });
      assert.deepEqual(sizes(stdout.text()), ['30 100', '40 120'], JSON.stringify(stdout.text()));
      assert.match(stdout.text(), /done\r\n$/);
      assert.deepEqual(r.status, { metadata: {}, status: 'Success' });
      assert.equal(r.closeCode, 1000);
    });

  test('with the size keys capitalised as Go encodes them, the same path works', async () => {
    // Same client-node session, but the resize messages are written by
    // hand on the socket it returned (channel 4, {"Width","Height"}).
    const url = await fx.h.execUrl(TTY);
    const stdout = new Collector();
    const stdin = new PassThrough();
    const r = await kubeExec(url, {
      stdout,
      stdin,
      tty: true,
      onOpen: async (ws) => {
        ws.send(Buffer.concat([Buffer.from([CH.RESIZE]),
          Buffer.from(JSON.stringify({ Width: 100, Height: 30 }))]));
        stdin.write('a\n');
        await waitText(stdout, /size=\d+ \d+\r\n/, 'size');
        stdin.end();
      },
    });
    assert.match(stdout.text(), /size=30 100\r\n/);
    assert.deepEqual(r.status, { metadata: {}, status: 'Success' });
    assert.equal(r.closeCode, 1000);
  });
});

stopTest(fx);
