// The pod's identity and network, looked at from inside its containers:
// hostname (the node's when the config has none), /etc/hostname, /etc/hosts
// and /etc/resolv.conf (dns_config, or the host's), namespaced sysctls,
// host ports through the CNI portmap plugin (reached with curl from the
// host, removed at StopPodSandbox, also after a restart), PodSandboxStatus
// addresses; bad values refused with INVALID_ARGUMENT naming the field
// while sluiced keeps serving; a run dir too long for the monitor socket
// refused at start. Where the private containerd (host network only: its
// CNI is empty) accepts the same config, the same checks run against it
// and both must agree. Real runc containers from the busybox image; root.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connectCri, status as S } from './lib/cri.mjs';
import {
  BUSYBOX_IMAGE, SLUICED, SluicedInstance, skipReason, sleep, waitLog, criLogLines,
} from './lib/sluiced.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// A static UDP receiver (busybox's nc has no UDP mode), from sluiced's build.
const UDP_RECV = path.resolve(path.dirname(SLUICED), '../../tests/tools/udp-recv');
const CONTAINERD = path.join(REPO, 'scripts/containerd');
// This file's own bridge and subnet (other files use sluice0/10.89.0.0/24, ...).
const BRIDGE = 'slt-podnet';
const PREFIX = '10.89.47';
const GATEWAY = `${PREFIX}.1`;
// A private containerd: own dir and stream port (10100 + 47).
const CTRD_ENV = {
  SLUICE_CONTAINERD_DIR: '/run/sluice-test/containerd-podnet',
  SLUICE_CONTAINERD_STREAM_PORT: '10147',
};
const CTRD_START_MS = 180000;
const HTTP_WAIT_MS = 20000;
// What the kubelet puts in a pod's /etc/hosts, before the pod's own line.
const KUBELET_HOSTS_LINES = [
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];
const NODE_HOSTNAME = os.hostname();
const readHost = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '');

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function podnetSkipReason() {
  const base = skipReason({ cni: true });
  if (base) return base;
  if (!have('iptables')) return 'iptables is not installed (the portmap plugin needs it)';
  if (!have('curl')) return 'curl is not installed (apt-get install curl)';
  if (!fs.existsSync(UDP_RECV)) return `no ${UDP_RECV} (build the tests)`;
  return false;
}

function containerdSkipReason() {
  if (process.getuid?.() !== 0) return 'containerd needs root';
  for (const c of ['containerd', 'ctr', 'runc'])
    if (!have(c)) return `${c} not installed (apt-get install containerd runc)`;
  if (!fs.existsSync('/bin/busybox')) return 'busybox-static not installed';
  return false;
}

async function rejectsWith(promise, code, re) {
  let err = null;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `accepted; wanted code ${code} matching ${re}`);
  assert.equal(err.code, code, `want code ${code}, got ${err.code}: ${err.details}`);
  if (re) assert.match(err.details, re);
  return err;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '0.0.0.0', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function curl(url, maxTime = 3) {
  return spawnSync('curl', ['-sS', '--max-time', String(maxTime), url], { encoding: 'utf8' });
}

// curl until the answer comes (the server in the container starts async).
async function curlUntil(url, ms = HTTP_WAIT_MS) {
  const end = Date.now() + ms;
  let r;
  for (;;) {
    r = curl(url);
    if (r.status === 0) return r.stdout;
    if (Date.now() > end) throw new Error(`curl ${url}: exit ${r.status}: ${r.stderr}`);
    await sleep(200);
  }
}

function natRules() {
  return spawnSync('iptables', ['-w', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout;
}

// A web server in the busybox image: httpd serving one page on port.
const httpd = (port, body) => ['sh', '-c',
  `mkdir -p /tmp/www && echo ${body} > /tmp/www/index.html && exec httpd -f -p ${port} -h /tmp/www`];

describe('pod identity and network (sluiced)', { skip: podnetSkipReason() }, () => {
  let sd;
  let startError = null;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'podnet', cni: { bridge: BRIDGE, subnet: `${PREFIX}.0/24` } })
      .catch((e) => {
        startError = e;
        return null;
      });
  });
  after(async () => {
    await sd?.destroy();
  });

  // A pod config as the kubelet sends it, with this file's extra fields.
  function podConfig(name, { hostNetwork = false, hostIpc = false, hostname = '', dns, ports, sysctls } = {}) {
    const c = sd.podConfig(name, { hostNetwork, hostname });
    if (hostIpc) c.linux.security_context.namespace_options.ipc = 'NODE';
    if (dns) c.dns_config = dns;
    if (ports) c.port_mappings = ports;
    if (sysctls) c.linux.sysctls = sysctls;
    return c;
  }

  async function runPod(name, opts = {}) {
    const config = podConfig(name, opts);
    const r = await sd.rt.RunPodSandbox({ config, runtime_handler: '' }, { deadlineMs: 30000 });
    sd.podIds.add(r.pod_sandbox_id);
    return { id: r.pod_sandbox_id, config };
  }

  async function removePod(pod) {
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id }, { deadlineMs: 30000 });
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id }, { deadlineMs: 30000 });
  }

  async function sh(ctr, script) {
    const r = await sd.execSync(ctr, ['sh', '-c', script]);
    assert.equal(r.exit_code, 0, `${script}: exit ${r.exit_code}: ${r.stderr}`);
    return r.stdout.toString();
  }

  // Stays serving, and no pod we did not mean to keep is listed.
  async function waitNoLeftovers() {
    const deadline = Date.now() + 10000;
    while (sd.leftovers().left.length && Date.now() < deadline) await sleep(100);
    assert.deepEqual(sd.leftovers().left, []);
  }

  async function stillServing(keep = []) {
    sd.assertAlive();
    const { items } = await sd.rt.ListPodSandbox({});
    assert.deepEqual(items.map((p) => p.id).filter((id) => !keep.includes(id)), []);
  }

  test('sluiced starts with the portmap plugin in its CNI config', () => {
    if (startError) throw startError;
    const pm = sd.cniConf.plugins.find((p) => p.type === 'portmap');
    assert.deepEqual(pm?.capabilities, { portMappings: true }, JSON.stringify(sd.cniConf));
  });

  test('no hostname: the node\'s (a 68-byte pod name as critest sends), files from the host', async () => {
    const name = `podnet-critest-like-name-${'x'.repeat(43)}`;
    assert.equal(name.length, 68);
    const pod = await runPod(name);
    const c = await sd.runContainer(pod, 'c', { command: ['sleep', '100000'] });
    const st = (await sd.rt.PodSandboxStatus({ pod_sandbox_id: pod.id })).status;
    assert.match(st.network.ip, new RegExp(`^${PREFIX.replaceAll('.', '\\.')}\\.\\d+$`));
    assert.equal(st.linux.namespaces.options.network, 'POD');
    assert.equal((await sh(c, 'hostname')).trim(), NODE_HOSTNAME);
    assert.equal(await sh(c, 'cat /etc/hostname'), `${NODE_HOSTNAME}\n`);
    const hosts = await sh(c, 'cat /etc/hosts');
    assert.deepEqual(hosts.split('\n').slice(1, 7), KUBELET_HOSTS_LINES, hosts);
    assert.ok(hosts.endsWith(`\n${st.network.ip}\t${NODE_HOSTNAME}\n`), hosts);
    assert.equal(await sh(c, 'cat /etc/resolv.conf'), readHost('/etc/resolv.conf'));
    // The address the status reports is eth0's inside.
    assert.match(await sh(c, 'ip -4 addr show eth0'), new RegExp(`inet ${st.network.ip}/24`));
    await removePod(pod);
  });

  test('hostname and dns_config: seen by every container; a config mount of /etc/hosts wins', async () => {
    const dns = {
      servers: ['10.96.0.10', 'fd00::a'],
      searches: ['ns1.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
      options: ['ndots:5', 'timeout:2'],
    };
    const pod = await runPod('named', { hostname: 'podnet-web-0', dns });
    const ip = (await sd.rt.PodSandboxStatus({ pod_sandbox_id: pod.id })).status.network.ip;
    const a = await sd.runContainer(pod, 'a', { command: ['sleep', '100000'] });
    const b = await sd.runContainer(pod, 'b', { command: ['sleep', '100000'] });
    const resolv = 'search ns1.svc.cluster.local svc.cluster.local cluster.local\n' +
      'nameserver 10.96.0.10\nnameserver fd00::a\noptions ndots:5 timeout:2\n';
    for (const c of [a, b]) {
      assert.equal((await sh(c, 'hostname')).trim(), 'podnet-web-0');
      assert.equal(await sh(c, 'cat /etc/hostname'), 'podnet-web-0\n');
      assert.equal(await sh(c, 'cat /etc/resolv.conf'), resolv);
      const hosts = await sh(c, 'cat /etc/hosts');
      assert.ok(hosts.endsWith(`\n${ip}\tpodnet-web-0\n`), hosts);
    }
    // The kubelet mounts its own /etc/hosts: that one is kept, ours skipped.
    const own = path.join(sd.root, 'kubelet-hosts');
    fs.writeFileSync(own, '# Kubernetes-managed hosts file.\n10.0.0.1\tother\n');
    const cfg = sd.ctrConfig('k', { command: ['sleep', '100000'] });
    cfg.mounts = [{ container_path: '/etc/hosts', host_path: own, readonly: false }];
    const { container_id: k } = await sd.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config: cfg, sandbox_config: pod.config });
    await sd.rt.StartContainer({ container_id: k });
    assert.equal(await sh(k, 'cat /etc/hosts'), fs.readFileSync(own, 'utf8'));
    assert.equal(await sh(k, 'cat /etc/resolv.conf'), resolv);
    // A read-only rootfs gets the files read-only, as containerd mounts them.
    const rcfg = sd.ctrConfig('ro', { command: ['sleep', '100000'] });
    rcfg.linux = { security_context: { readonly_rootfs: true } };
    const { container_id: ro } = await sd.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config: rcfg, sandbox_config: pod.config });
    await sd.rt.StartContainer({ container_id: ro });
    assert.equal(await sh(ro, 'cat /etc/hostname'), 'podnet-web-0\n');
    const w = await sd.execSync(ro, ['sh', '-c', 'echo x >> /etc/hosts']);
    assert.notEqual(w.exit_code, 0, 'wrote to a read-only /etc/hosts');
    await removePod(pod);
  });

  test('sysctls: set in the pod\'s namespaces, seen by every container, host untouched', async () => {
    const hostBefore = {
      port: readHost('/proc/sys/net/ipv4/ip_unprivileged_port_start'),
      shmmax: readHost('/proc/sys/kernel/shmmax'),
    };
    const pod = await runPod('sysctl', {
      sysctls: {
        'net.ipv4.ip_unprivileged_port_start': '80',
        'net.ipv4.ip_local_port_range': '20000 30000',
        'kernel.shmmax': '123456789',
        'kernel/shm_rmid_forced': '1', // the slash form
        'fs.mqueue.msg_max': '100',
      },
    });
    const a = await sd.runContainer(pod, 'a', { command: ['sleep', '100000'] });
    const b = await sd.runContainer(pod, 'b', { command: ['sleep', '100000'] });
    for (const c of [a, b]) {
      assert.equal(await sh(c, 'sysctl -n net.ipv4.ip_unprivileged_port_start'), '80\n');
      assert.equal(await sh(c, 'cat /proc/sys/net/ipv4/ip_local_port_range'), '20000\t30000\n');
      assert.equal(await sh(c, 'cat /proc/sys/kernel/shmmax'), '123456789\n');
      assert.equal(await sh(c, 'cat /proc/sys/kernel/shm_rmid_forced'), '1\n');
      assert.equal(await sh(c, 'sysctl -n fs.mqueue.msg_max'), '100\n');
    }
    assert.equal(readHost('/proc/sys/net/ipv4/ip_unprivileged_port_start'), hostBefore.port);
    assert.equal(readHost('/proc/sys/kernel/shmmax'), hostBefore.shmmax);
    await removePod(pod);
  });

  test('host ports: TCP on every host address, host_ip honoured, UDP; gone at stop, also after a restart', async () => {
    const [tcpAll, tcpLocal, udp] = [await freePort(), await freePort(), await freePort()];
    const pod = await runPod('ports', {
      ports: [
        { protocol: 'TCP', container_port: 8080, host_port: tcpAll },
        { protocol: 'TCP', container_port: 8081, host_port: tcpLocal, host_ip: '127.0.0.1' },
        { protocol: 'UDP', container_port: 9090, host_port: udp },
        { protocol: 'TCP', container_port: 7070 }, // no host port: nothing to map
      ],
    });
    await sd.runContainer(pod, 'web', { command: httpd(8080, 'hello-podnet') });
    await sd.runContainer(pod, 'web2', { command: httpd(8081, 'local-only') });
    const ucfg = sd.ctrConfig('udp', { command: ['/udp-recv', '9090'] });
    ucfg.mounts = [{ container_path: '/udp-recv', host_path: UDP_RECV, readonly: true }];
    const { container_id: u } = await sd.rt.CreateContainer(
      { pod_sandbox_id: pod.id, config: ucfg, sandbox_config: pod.config });
    await sd.rt.StartContainer({ container_id: u });
    assert.equal(await curlUntil(`http://127.0.0.1:${tcpAll}/`), 'hello-podnet\n');
    // Another address of the host: the bridge's gateway address.
    assert.equal(await curlUntil(`http://${GATEWAY}:${tcpAll}/`), 'hello-podnet\n');
    assert.equal(await curlUntil(`http://127.0.0.1:${tcpLocal}/`), 'local-only\n');
    const other = curl(`http://${GATEWAY}:${tcpLocal}/`, 2);
    assert.notEqual(other.status, 0, `host_ip 127.0.0.1 answered on ${GATEWAY}: ${other.stdout}`);
    // UDP: datagrams to the host port reach nc, whose stdout is the log.
    const sock = dgram.createSocket('udp4');
    const log = sd.logPath(pod, 'udp');
    const sending = setInterval(() => sock.send('udp-through-portmap\n', udp, '127.0.0.1'), 200);
    try {
      await waitLog(log, (r) => criLogLines(r, 'stdout').includes('udp-through-portmap'), 'udp datagram');
    } finally {
      clearInterval(sending);
      sock.close();
    }
    assert.match(natRules(), new RegExp(`--dport ${tcpAll}\\b`));
    // A restarted sluiced still removes the rules: DEL gets the same
    // runtimeConfig from the pod's stored config.
    await sd.restart();
    await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id }, { deadlineMs: 30000 });
    for (const p of [tcpAll, tcpLocal, udp])
      assert.doesNotMatch(natRules(), new RegExp(`--dport ${p}\\b`), `rules for ${p} left`);
    assert.notEqual(curl(`http://127.0.0.1:${tcpAll}/`, 2).status, 0, 'still answering after stop');
    await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id }, { deadlineMs: 30000 });
  });

  test('a host port without a portMappings plugin: UNIMPLEMENTED naming it, nothing created', async () => {
    const file = path.join(sd.cniDir, '10-sluice.conflist');
    const saved = fs.readFileSync(file, 'utf8');
    const conf = JSON.parse(saved);
    conf.plugins = conf.plugins.filter((p) => p.type !== 'portmap');
    fs.writeFileSync(file, JSON.stringify(conf));
    try {
      await rejectsWith(runPod('noportmap', { ports: [{ container_port: 80, host_port: await freePort() }] }),
        S.UNIMPLEMENTED, /port_mappings\[0\]\.host_port: \d+ needs a CNI plugin with the portMappings capability/);
      // Without a host port the same network works.
      const pod = await runPod('noportmap-ok', { ports: [{ container_port: 80 }] });
      await removePod(pod);
    } finally {
      fs.writeFileSync(file, saved);
    }
    await stillServing();
  });

  test('host network: the host\'s UTS namespace, hosts and resolv.conf; equal ports accepted', async () => {
    const port = await freePort();
    const pod = await runPod('hostnet', {
      hostNetwork: true,
      ports: [{ container_port: port, host_port: port }, { container_port: port + 1 }],
    });
    const st = (await sd.rt.PodSandboxStatus({ pod_sandbox_id: pod.id })).status;
    assert.equal(st.linux.namespaces.options.network, 'NODE');
    assert.equal(st.network.ip, '');
    const c = await sd.runContainer(pod, 'c', { command: httpd(port, 'on-the-host') });
    assert.equal((await sh(c, 'hostname')).trim(), NODE_HOSTNAME);
    assert.equal(await sh(c, 'cat /etc/hostname'), `${NODE_HOSTNAME}\n`);
    assert.equal(await sh(c, 'cat /etc/hosts'), readHost('/etc/hosts'));
    assert.equal(await sh(c, 'cat /etc/resolv.conf'), readHost('/etc/resolv.conf'));
    const inner = (await sh(c, 'readlink /proc/1/ns/uts')).trim();
    assert.equal(inner, fs.readlinkSync('/proc/self/ns/uts'), 'not the host\'s UTS namespace');
    assert.equal(await curlUntil(`http://127.0.0.1:${port}/`), 'on-the-host\n');
    await removePod(pod);
  });

  describe('bad values: INVALID_ARGUMENT naming the field, nothing left, still serving', () => {
    const cases = [
      ['a 65-byte hostname', { hostname: 'h'.repeat(65) }, /^hostname: 65 bytes, more than 64/],
      ['a hostname with a newline', { hostname: 'a\nb' }, /^hostname: "a\nb" is not a host name/],
      ['a hostname on host network', { hostNetwork: true, hostname: 'web' }, /^hostname: cannot be set on a pod with host network/],
      ['an unknown sysctl', { sysctls: { 'net.ipv4.no_such_thing': '1' } },
        /^linux\.sysctls\["net\.ipv4\.no_such_thing"\]: no such sysctl in the pod's namespaces/],
      ['a non-namespaced sysctl', { sysctls: { 'kernel.panic': '10' } },
        /^linux\.sysctls\["kernel\.panic"\]: not a namespaced sysctl/],
      ['a sysctl path out of /proc/sys', { sysctls: { 'net/../../etc/passwd': 'x' } },
        /^linux\.sysctls\["net\/\.\.\/\.\.\/etc\/passwd"\]: not a sysctl name/],
      ['net.* on host network', { hostNetwork: true, sysctls: { 'net.ipv4.ip_forward': '1' } },
        /^linux\.sysctls\["net\.ipv4\.ip_forward"\]: a net\.\* sysctl cannot be set on a pod with host network/],
      ['an IPC sysctl on host IPC', { hostIpc: true, sysctls: { 'kernel.shmmax': '1' } },
        /^linux\.sysctls\["kernel\.shmmax"\]: an IPC sysctl cannot be set on a pod with host IPC/],
      ['a sysctl value the kernel refuses', { sysctls: { 'kernel.shmmax': 'lots' } },
        /^linux\.sysctls\["kernel\.shmmax"\]: the kernel refused the value "lots"/],
      ['four DNS servers', { dns: { servers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] } },
        /^dns_config\.servers: 4 servers, more than 3/],
      ['a DNS server that is not an address', { dns: { servers: ['dns.example'] } },
        /^dns_config\.servers\[0\]: "dns\.example" is not an IP address/],
      ['33 search domains', { dns: { searches: Array.from({ length: 33 }, (_, i) => `d${i}.example`) } },
        /^dns_config\.searches: 33 domains, more than 32/],
      ['a search domain with a space', { dns: { searches: ['ok.example', 'a b'] } },
        /^dns_config\.searches\[1\]: "a b" is not a domain name/],
      ['search domains of over 2048 characters', { dns: { searches: Array.from({ length: 9 }, () => 'a'.repeat(227)) } },
        /^dns_config\.searches: 2051 characters, more than 2048/],
      ['a DNS option with a newline', { dns: { options: ['ndots:5\nnameserver 6.6.6.6'] } },
        /^dns_config\.options\[0\]: "ndots:5\nnameserver 6\.6\.6\.6" is not a resolver option/],
      ['a negative host port', { ports: [{ container_port: 80, host_port: -1 }] },
        /^port_mappings\[0\]\.host_port: -1 is not a port/],
      ['a container port over 65535', { ports: [{ container_port: 70000 }] },
        /^port_mappings\[0\]\.container_port: 70000 is not a port/],
      ['a host_ip that is not an address', { ports: [{ container_port: 80, host_port: 8080, host_ip: 'localhost' }] },
        /^port_mappings\[0\]\.host_ip: "localhost" is not an IP address/],
      ['the same host port twice', { ports: [{ container_port: 80, host_port: 8080 }, { container_port: 81, host_port: 8080 }] },
        /^port_mappings\[1\]\.host_port: 8080\/tcp is mapped already by port_mappings\[0\]/],
      ['a remapped port on host network', { hostNetwork: true, ports: [{ container_port: 80, host_port: 8080 }] },
        /^port_mappings\[0\]\.host_port: 8080 differs from container_port 80/],
      ['a host_ip on host network', { hostNetwork: true, ports: [{ container_port: 80, host_port: 80, host_ip: '127.0.0.1' }] },
        /^port_mappings\[0\]\.host_ip: cannot be enforced on a pod with host network/],
    ];
    for (const [what, opts, re] of cases) {
      test(what, async () => {
        await rejectsWith(runPod('bad', opts), S.INVALID_ARGUMENT, re);
        await stillServing();
        // Monitors of pods removed by earlier tests exit after their
        // answer (slowly under ASan): wait for them, then nothing is left.
        await waitNoLeftovers();
      });
    }

    test('a relative log_directory', async () => {
      const config = podConfig('badlog');
      config.log_directory = 'relative/logs';
      await rejectsWith(sd.rt.RunPodSandbox({ config }), S.INVALID_ARGUMENT,
        /^log_directory: "relative\/logs" is not an absolute path/);
      assert.equal(fs.existsSync(path.join(process.cwd(), 'relative')), false);
      await stillServing();
    });

    test('a log_path that leaves log_directory, or names no file', async () => {
      const pod = await runPod('logpath');
      for (const [logPath, re] of [
        ['../escape.log', /^log_path: "\.\.\/escape\.log" leaves the pod's log_directory/],
        ['a/../../b.log', /^log_path: "a\/\.\.\/\.\.\/b\.log" leaves the pod's log_directory/],
        ['/abs.log', /^log_path: "\/abs\.log" is absolute/],
        ['a/..', /^log_path: "a\/\.\." does not name a file/],
      ]) {
        await rejectsWith(sd.createContainer(pod, 'c', { command: ['true'], logPath }),
          S.INVALID_ARGUMENT, re);
      }
      // Inside is fine, ".." included.
      const c = await sd.runContainer(pod, 'ok', { command: ['echo', 'in-dir'], logPath: 'x/../ok/0.log' });
      await sd.waitState(c, 'CONTAINER_EXITED');
      assert.match(fs.readFileSync(path.join(pod.config.log_directory, 'ok/0.log'), 'utf8'), /in-dir/);
      await stillServing([pod.id]);
      await removePod(pod);
    });
  });

  test('a run dir too long for the monitor socket: refused at start with the reason', () => {
    const long = path.join(sd.root, 'r'.repeat(40));
    const r = spawnSync(SLUICED, ['--listen', `unix://${path.join(sd.root, 'long.sock')}`,
      '--stream-port', '0', '--state-dir', path.join(sd.root, 'long-state'), '--run-dir', long],
    { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /run-dir: ".*" is \d+ bytes, at most 28 fit: each pod's monitor socket RUN-DIR\/pods\/<64-hex pod id>\/mon\.sock must fit/);
    assert.equal(fs.existsSync(long), false);
  });

  test('SIGTERM: exit 0, sanitizer-clean, nothing left behind', async () => {
    await sd.stop();
    assert.doesNotMatch(natRules(), new RegExp(BRIDGE));
  });
});

// ---- the same configs against containerd (host network: its CNI is empty) ----

describe('pod identity and network: containerd agrees (host network)', { skip: containerdSkipReason() || podnetSkipReason() }, () => {
  let ctrd = null;
  let sd = null;
  let startedHere = false;
  let logDir;
  const pods = [];

  const runCtrd = (args) => spawnSync(CONTAINERD, args, {
    env: { ...process.env, ...CTRD_ENV }, encoding: 'utf8', timeout: CTRD_START_MS,
  });

  before(async () => {
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'podnet-ctrd-'));
    if (runCtrd(['status']).status !== 0) {
      const r = runCtrd(['start']);
      if (r.status !== 0) throw new Error(`scripts/containerd start: ${r.stdout}${r.stderr}`);
      startedHere = true;
    }
    const env = Object.fromEntries(runCtrd(['env']).stdout.trim().split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    ctrd = await connectCri(env.CONTAINERD_ENDPOINT);
    sd = await SluicedInstance.start({ label: 'pnctrd' });
  }, { timeout: CTRD_START_MS });

  after(async () => {
    if (ctrd) {
      for (const id of pods) {
        await ctrd.runtime.StopPodSandbox({ pod_sandbox_id: id }).catch(() => {});
        await ctrd.runtime.RemovePodSandbox({ pod_sandbox_id: id }).catch(() => {});
      }
      ctrd.close();
    }
    await sd?.destroy();
    if (startedHere) runCtrd(['stop', '--purge']);
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  }, { timeout: CTRD_START_MS });

  let seq = 0;
  function config(name, { hostname = '', dns, sysctls, ports } = {}) {
    const uid = `podnet-${process.pid}-${++seq}`;
    const c = {
      metadata: { name, uid, namespace: 'podnet', attempt: 0 },
      hostname,
      log_directory: path.join(logDir, uid),
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
    if (dns) c.dns_config = dns;
    if (sysctls) c.linux.sysctls = sysctls;
    if (ports) c.port_mappings = ports;
    return c;
  }

  // Runs the pod and one container on one runtime; resolves the container
  // {client, id} or {err}.
  async function one(rt, name, opts, command = ['sleep', '100000']) {
    const client = rt === 'containerd' ? ctrd : sd.cri;
    const cfg = config(name, opts);
    let podId;
    try {
      podId = (await client.runtime.RunPodSandbox({ config: cfg }, { deadlineMs: 60000 })).pod_sandbox_id;
    } catch (e) {
      return { err: e };
    }
    if (rt === 'containerd') pods.push(podId);
    else sd.podIds.add(podId);
    const { container_id: id } = await client.runtime.CreateContainer({
      pod_sandbox_id: podId, sandbox_config: cfg,
      config: { metadata: { name: 'c', attempt: 0 }, image: { image: BUSYBOX_IMAGE }, command, log_path: 'c.log' },
    }, { deadlineMs: 60000 });
    await client.runtime.StartContainer({ container_id: id }, { deadlineMs: 60000 });
    return { client, id, podId };
  }

  async function both(name, opts, command) {
    return { containerd: await one('containerd', name, opts, command), sluiced: await one('sluiced', name, opts, command) };
  }

  async function cat(side, file) {
    const r = await side.client.runtime.ExecSync({ container_id: side.id, cmd: ['cat', file], timeout: 10 },
      { deadlineMs: 20000 });
    assert.equal(r.exit_code, 0, `${file}: ${r.stderr}`);
    return r.stdout.toString();
  }

  async function sameFiles(r, files) {
    for (const k of ['containerd', 'sluiced']) assert.ok(!r[k].err, `${k}: ${r[k].err?.details}`);
    const seen = {};
    for (const f of files) {
      const [a, b] = [await cat(r.containerd, f), await cat(r.sluiced, f)];
      assert.equal(b, a, `${f} differs: containerd ${JSON.stringify(a)} sluiced ${JSON.stringify(b)}`);
      seen[f] = a;
    }
    return seen;
  }

  test('dns_config: the same resolv.conf; hostname, /etc/hostname and /etc/hosts the host\'s', async () => {
    const dns = { servers: ['10.10.10.10', '10.10.10.11'], searches: ['google.com', 'example.org'], options: ['ndots:8', 'timeout:2'] };
    const seen = await sameFiles(await both('dns', { dns }), ['/etc/resolv.conf', '/etc/hostname', '/etc/hosts', '/proc/sys/kernel/hostname']);
    assert.equal(seen['/etc/resolv.conf'],
      'search google.com example.org\nnameserver 10.10.10.10\nnameserver 10.10.10.11\noptions ndots:8 timeout:2\n');
    assert.equal(seen['/etc/hostname'], `${NODE_HOSTNAME}\n`);
    assert.equal(seen['/etc/hosts'], readHost('/etc/hosts'));
  });

  test('no dns_config: both copy the host\'s resolv.conf', async () => {
    const seen = await sameFiles(await both('nodns', {}), ['/etc/resolv.conf']);
    assert.equal(seen['/etc/resolv.conf'], readHost('/etc/resolv.conf'));
  });

  test('IPC sysctls on a host-network pod with its own IPC namespace: the same values inside', async () => {
    const seen = await sameFiles(await both('ipcsys', { sysctls: { 'kernel.shmmax': '123456789', 'fs.mqueue.msg_max': '100' } }),
      ['/proc/sys/kernel/shmmax', '/proc/sys/fs/mqueue/msg_max']);
    assert.equal(seen['/proc/sys/kernel/shmmax'], '123456789\n');
    assert.equal(seen['/proc/sys/fs/mqueue/msg_max'], '100\n');
  });

  test('an equal host port on host network: both accept, the port is the host\'s', async () => {
    for (const rt of ['containerd', 'sluiced']) {
      const port = await freePort();
      const r = await one(rt, 'hostport', { ports: [{ container_port: port, host_port: port }] },
        httpd(port, `hp-${rt}`));
      assert.ok(!r.err, `${rt}: ${r.err?.details}`);
      assert.equal(await curlUntil(`http://127.0.0.1:${port}/`), `hp-${rt}\n`);
    }
  });

  for (const [what, opts, key] of [
    ['a net.* sysctl on host network', { sysctls: { 'net.ipv4.ip_forward': '1' } }, 'net.ipv4.ip_forward'],
    ['a non-namespaced sysctl', { sysctls: { 'kernel.panic': '10' } }, 'kernel.panic'],
    ['a hostname on host network', { hostname: 'web' }, 'hostname'],
  ]) {
    test(`${what}: both refuse, naming it (sluiced with INVALID_ARGUMENT)`, async () => {
      const r = await both('refused', opts);
      assert.ok(r.containerd.err, `containerd accepted ${what}`);
      assert.ok(r.sluiced.err, `sluiced accepted ${what}`);
      assert.equal(r.sluiced.err.code, S.INVALID_ARGUMENT, r.sluiced.err.details);
      for (const k of ['containerd', 'sluiced'])
        assert.ok(r[k].err.details.includes(key), `${k} does not name ${key}: ${r[k].err.details}`);
    });
  }

  test('sluiced stops clean', async () => {
    await sd.stop();
  });
});
