// A CRI (runtime.v1) gRPC client for the interop tests, independent of sluice:
// @grpc/grpc-js over a unix socket, schema from proto/api.proto.
//
//   const cri = await connectCri('unix:///run/sluice-test/containerd/containerd.sock');
//   const v = await cri.runtime.Version({ version: '' });
//   const r = await cri.runtime.Exec({ container_id, cmd: ['echo', 'hi'], stdout: true });
//   const sub = cri.events();          // GetContainerEvents (server streaming)
//   await sub.ready;                   // the response headers: subscribed
//   await sub.waitFor((evs) => evs.length >= 2, 5000, 'two events');
//   sub.cancel();
//   cri.close();
//
// Every method returns a promise, takes (request, { deadlineMs }) and rejects
// with the grpc-js error (err.code is the numeric gRPC status).
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PROTO_PATH = path.resolve(here, '../../../proto/api.proto');

export const DEFAULT_DEADLINE_MS = 10000;
// The kubelet's cri-client receive limit (16 MiB).
const MAX_MSG_BYTES = 16 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 5000;

let cachedPackage = null;

// The loaded runtime.v1 package (service constructors, message types).
export function loadCriPackage() {
  if (!cachedPackage) {
    const def = protoLoader.loadSync(PROTO_PATH, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    cachedPackage = grpc.loadPackageDefinition(def).runtime.v1;
  }
  return cachedPackage;
}

export const status = grpc.status;

function promisify(client, method) {
  return (request = {}, opts = {}) =>
    new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + (opts.deadlineMs ?? DEFAULT_DEADLINE_MS));
      client[method](request, new grpc.Metadata(), { deadline }, (err, resp) => {
        if (err) reject(err);
        else resolve(resp);
      });
    });
}

// Wraps every unary method of a grpc-js client in a promise-returning function.
function wrapService(client, Service) {
  const api = {};
  for (const method of Object.keys(Service.service)) api[method] = promisify(client, method);
  return api;
}

function waitReady(client, ms) {
  return new Promise((resolve, reject) => {
    client.waitForReady(new Date(Date.now() + ms), (err) => (err ? reject(err) : resolve()));
  });
}

// GetContainerEvents on a grpc-js RuntimeService client. Returns
// { call, events, status, error, ready, ended, waitFor(pred, ms, what),
// cancel() }:
// events collects every ContainerEventResponse in order; ready resolves at
// the response headers (the server has registered the subscriber); status
// is the final grpc-js status once the stream ended (ended resolves with
// it); waitFor resolves
// events once pred(events) holds, or rejects on timeout or stream end.
export function subscribeEvents(client, { deadlineMs } = {}) {
  const options = deadlineMs ? { deadline: new Date(Date.now() + deadlineMs) } : {};
  const call = client.GetContainerEvents({}, new grpc.Metadata(), options);
  const sub = { call, events: [], status: null, error: null };
  const waiters = new Set();
  const notify = () => { for (const w of [...waiters]) w(); };
  sub.ready = new Promise((resolve, reject) => {
    call.on('metadata', () => resolve());
    call.on('status', (st) => {
      sub.status = st;
      reject(new Error(`GetContainerEvents ended before its headers: ${st.code} ${st.details}`));
      notify();
    });
  });
  sub.ready.catch(() => {});
  sub.ended = new Promise((resolve) => call.on('status', resolve));
  call.on('data', (ev) => { sub.events.push(ev); notify(); });
  call.on('error', (e) => { sub.error = e; notify(); });
  sub.waitFor = (pred, ms, what) => new Promise((resolve, reject) => {
    const check = () => {
      if (pred(sub.events)) return done(null);
      if (sub.status) return done(new Error(`${what}: the stream ended (${sub.status.code} ` +
        `${sub.status.details}); got ${JSON.stringify(sub.events.map(briefEvent))}`));
      return undefined;
    };
    const timer = setTimeout(() => done(new Error(`${what}: not within ${ms} ms; got ` +
      JSON.stringify(sub.events.map(briefEvent)))), ms);
    function done(err) {
      clearTimeout(timer);
      waiters.delete(check);
      if (err) reject(err);
      else resolve(sub.events);
    }
    waiters.add(check);
    check();
  });
  sub.cancel = () => call.cancel();
  return sub;
}

// [type, container id prefix] of an event, for messages.
export function briefEvent(ev) {
  return [ev.container_event_type, ev.container_id.slice(0, 12)];
}

// endpoint: 'unix:///abs/path.sock' (or 'unix:/abs/path.sock').
// Resolves once the channel is connected, so a missing socket fails fast.
// grpc-js shares one connection among clients of the same target and
// options; ownConnection gives this client a connection of its own.
export async function connectCri(endpoint,
  { connectTimeoutMs = CONNECT_TIMEOUT_MS, ownConnection = false } = {}) {
  const pkg = loadCriPackage();
  const options = {
    'grpc.max_receive_message_length': MAX_MSG_BYTES,
    // What the kubelet sends as :authority on a unix socket.
    'grpc.default_authority': 'localhost',
    ...(ownConnection ? { 'grpc.use_local_subchannel_pool': 1 } : {}),
  };
  const creds = grpc.credentials.createInsecure();
  const runtimeClient = new pkg.RuntimeService(endpoint, creds, options);
  // The image client shares the channel so both services use one connection.
  const imageClient = new pkg.ImageService(endpoint, creds, {
    ...options,
    channelOverride: runtimeClient.getChannel(),
  });
  try {
    await waitReady(runtimeClient, connectTimeoutMs);
  } catch (err) {
    runtimeClient.close();
    throw new Error(`CRI endpoint ${endpoint} not reachable: ${err.message}`);
  }
  return {
    endpoint,
    runtime: wrapService(runtimeClient, pkg.RuntimeService),
    image: wrapService(imageClient, pkg.ImageService),
    events: (opts) => subscribeEvents(runtimeClient, opts),
    close() {
      imageClient.close();
      runtimeClient.close();
    },
  };
}

// A CRI UInt64Value ({ value: '123' } with longs as strings) as a BigInt,
// or null when the field is unset.
export function u64(v) {
  return v === null || v === undefined ? null : BigInt(v.value);
}
