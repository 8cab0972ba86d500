// The skips a CI run accepts: reasons that are true on the CI machine kind
// (Debian 12, root, cgroup v1, every package of scripts/deps installed).
// Under CI=true scripts/check fails the interop lane on any other skip, a
// skipped suite (describe) included: a test that can run there must run.
//
// A skip is allowed when its reason starts with one of these texts; give a
// reason exactly this way in the test, and add an entry here only for
// something the machine kind cannot have.
export const ALLOWED_SKIPS = [
  // tty_size.test.mjs: crictl is no Debian package (nor in bookworm-backports).
  'no crictl (cri-tools is not packaged in Debian 12)',
];

export function skipAllowed(reason) {
  return ALLOWED_SKIPS.some((a) => reason.startsWith(a));
}

// Reads node:test TAP output; returns every skip with its reason, whether
// it skipped a whole suite, and whether the allow-list accepts it.
export function skipsInTap(text) {
  const lines = text.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    const m = /^\s*ok \d+ - (.*?) # SKIP\s*(.*)$/.exec(line);
    if (!m) return;
    // The YAML block after the line says `type: 'suite'` for a describe.
    let suite = false;
    for (let j = i + 1; j < lines.length && !/^\s*\.\.\.$/.test(lines[j]); j++)
      if (/^\s*type: 'suite'$/.test(lines[j])) suite = true;
    const reason = m[2].trim();
    out.push({ name: m[1], reason, suite, allowed: reason !== '' && skipAllowed(reason) });
  });
  return out;
}

// `node lib/skips.mjs [--ci] < tap`: prints each skip; with --ci, exits 1
// when one is not on the allow-list (without --ci, only a bare skip fails).
if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  const ci = process.argv.includes('--ci');
  const chunks = [];
  process.stdin.on('data', (d) => chunks.push(d));
  process.stdin.on('end', () => {
    let bad = 0;
    for (const s of skipsInTap(Buffer.concat(chunks).toString('utf8'))) {
      const fails = s.reason === '' || (ci && !s.allowed);
      if (fails) bad++;
      console.log(`skipped${s.suite ? ' suite' : ''}: ${s.name} # ${s.reason || '(no reason)'}` +
        (fails ? (s.reason === '' ? '  FAIL: a skip must give its reason' :
          '  FAIL: not on the CI allow-list (tests/interop/lib/skips.mjs)') : ''));
    }
    console.log(`skips: ${bad} not allowed`);
    process.exit(bad ? 1 : 0);
  });
}
