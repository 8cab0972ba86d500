// Demo client for scripts/demo: asks sluice-hostd's admin endpoint for exec
// URLs (the stand-in for CRI Exec) and runs them over WebSocket v5.
const WebSocket = require('ws');

const admin = process.argv[2] || '127.0.0.1:10011';

async function execUrl(cmd, opts) {
  const q = new URLSearchParams();
  for (const c of cmd) q.append('cmd', c);
  for (const [k, v] of Object.entries(opts)) if (v) q.append(k, '1');
  const r = await fetch(`http://${admin}/exec?${q}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error);
  return body.url.replace(/^http/, 'ws');
}

function exitCode(status) {
  if (status.status === 'Success') return 0;
  const cause = (status.details?.causes || []).find((c) => c.reason === 'ExitCode');
  return cause ? Number(cause.message) : -1;
}

// Runs one session; onOutput(channel, text, ws) may send input.
function run(url, onOutput) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['v5.channel.k8s.io']);
    let status = null;
    ws.on('message', (data) => {
      const ch = data[0], text = data.subarray(1).toString();
      if (ch === 3) status = JSON.parse(text);
      else if (text.length) onOutput(ch, text, ws);
    });
    ws.on('close', (code) => resolve({ code, status }));
    ws.on('error', reject);
    ws.on('open', () => onOutput(-1, '', ws));
  });
}

const send = (ws, ch, s) => ws.send(Buffer.concat([Buffer.from([ch]), Buffer.from(s)]));

async function main() {
  console.log('\n1) exec: sh -c \'echo ...; echo ... >&2; exit 3\' (stdout and stderr apart)');
  let url = await execUrl(['sh', '-c', 'echo "hello from $(hostname), streamed by sluice"; echo "this line went to stderr" >&2; exit 3'],
    { stdout: 1, stderr: 1 });
  console.log('   URL:', url);
  let r = await run(url, (ch, text) => {
    if (ch >= 0) process.stdout.write(`   [${ch === 1 ? 'stdout' : 'stderr'}] ${text}`);
  });
  console.log(`   exit code: ${exitCode(r.status)}  (status: ${r.status.message})`);

  console.log('\n2) exec with a terminal: resize to 100x30, then to 132x43, and ask stty each time');
  url = await execUrl(['sh', '-c', 'read a; echo "terminal is $(stty size) (rows cols)"; read b; echo "terminal is $(stty size) (rows cols)"'],
    { stdin: 1, stdout: 1, tty: 1 });
  let step = 0;
  r = await run(url, (ch, text, ws) => {
    if (ch === -1) {
      send(ws, 4, JSON.stringify({ Width: 100, Height: 30 }));
      send(ws, 0, 'go\n');
      return;
    }
    for (const line of text.split(/\r?\n/)) if (line.startsWith('terminal')) {
      console.log('   ' + line);
      if (step++ === 0) {
        send(ws, 4, JSON.stringify({ Width: 132, Height: 43 }));
        send(ws, 0, 'go\n');
      }
    }
  });
  console.log(`   exit code: ${exitCode(r.status)}, WebSocket closed with ${r.code}`);
}

main().catch((e) => { console.error('demo failed:', e.message); process.exit(1); });
