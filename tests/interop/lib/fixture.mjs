// Per-file server fixtures for node:test.
import { after, before, test } from 'node:test';
import { startHostd } from './hostd.mjs';
import { terminateAll } from './session.mjs';

// Starts one sluice-hostd (with extra args) before the file's tests; a
// backstop kills it if the stop test never ran. Use fx.h in tests.
export function serverFixture(args = []) {
  const fx = { h: null, args };
  before(async () => {
    fx.h = await startHostd(args);
  });
  after(() => {
    if (fx.h && !fx.h.exited) fx.h.proc.kill('SIGKILL');
  });
  return fx;
}

// The file's last two tests: no session or process is left over; then
// SIGTERM must give exit 0 with no sanitizer report (stderr shown
// otherwise). Separate, so a leftover session does not hide the exit check.
export function stopTest(fx, label = '') {
  const name = `sluice-hostd${label ? ` (${label})` : ''}`;
  test(`${name} has no session or process left over`, async () => {
    terminateAll(); // sockets that a failed test left open
    await fx.h.waitStats((s) => s.sessions === 0 && s.running === 0, 5000,
      'sessions 0 and running 0');
  });
  test(`${name} exits 0 on SIGTERM, sanitizer-clean`, async () => {
    await fx.h.stop();
  });
}
