// A peer that vanishes without FIN or RST (a pulled cable, a dead NAT): the
// server's TCP keepalive must notice, end the session and kill the process.
// The silence is made real with an iptables rule that drops every packet
// from the client's port to the server, so the server's probes go
// unanswered while the client's socket stays open.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { serverFixture, stopTest } from './lib/fixture.mjs';
import { CH, V5, connect } from './lib/session.mjs';

function skipReason() {
  if (process.getuid?.() !== 0) return 'needs root (iptables)';
  if (spawnSync('iptables', ['-w', '-L', 'INPUT', '-n']).status !== 0)
    return 'iptables is not usable here (apt-get install iptables)';
  return false;
}
const skip = skipReason();

// Probing after 1 s of silence, 1 s apart, 2 misses: gone after about 3 s.
const fx = serverFixture(['--keepalive-idle-ms', '1000', '--keepalive-interval-ms', '1000',
  '--keepalive-count', '2']);

function iptables(op, rule) {
  const r = spawnSync('iptables', ['-w', op, 'INPUT', ...rule], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`iptables ${op} ${rule.join(' ')}: ${r.stderr}`);
}

async function silentDrop(opts) {
  const was = await fx.h.waitStats((st) => st.sessions === 0 && st.running === 0, 5000, 'idle');
  const url = await fx.h.execUrl(opts);
  const s = await connect(url, { protocols: [V5] });
  await s.waitFor(() => s.text(CH.STDOUT).startsWith('started'), 'the process to start');
  const during = await fx.h.stats();
  assert.equal(during.sessions, was.sessions + 1);
  const port = s.ws._socket.localPort;
  const rule = ['-p', 'tcp', '-s', '127.0.0.1', '--sport', String(port),
    '--dport', String(fx.h.port), '-j', 'DROP'];
  iptables('-I', rule);
  const t0 = Date.now();
  try {
    await fx.h.waitStats((st) => st.sessions === was.sessions && st.running === was.running,
      15000, 'the session and its process gone after the peer went silent');
  } finally {
    iptables('-D', rule);
    s.ws.terminate();
  }
  return Date.now() - t0;
}

describe('TCP keepalive', { skip }, () => {
  test('a silent peer of an idle session: ended and its process killed', async () => {
    const ms = await silentDrop({ cmd: ['sh', '-c', 'echo started; exec sleep 1000'], stdin: 1,
      stdout: 1 });
    // idle 1 s + 2 probes 1 s apart, rounded to the kernel's seconds
    assert.ok(ms >= 1500, `ended after ${ms} ms: before keepalive could have fired`);
  });

  test('a silent peer while output is streaming to it: ended (unacked data)', async () => {
    await silentDrop({ cmd: ['sh', '-c', 'echo started; exec yes'], stdout: 1 });
  });
});

stopTest(fx, 'keepalive');
