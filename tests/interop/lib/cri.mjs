// A CRI (runtime.v1) gRPC client for the interop tests, independent of sluice:
// @grpc/grpc-js over a unix socket, schema from proto/api.proto.
//
//   const cri = await connectCri('unix:///run/sluice-test/containerd/containerd.sock');
//   const v = await cri.runtime.Version({ version: '' });
//   const r = await cri.runtime.Exec({ container_id, cmd: ['echo', 'hi'], stdout: true });
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

// endpoint: 'unix:///abs/path.sock' (or 'unix:/abs/path.sock').
// Resolves once the channel is connected, so a missing socket fails fast.
export async function connectCri(endpoint, { connectTimeoutMs = CONNECT_TIMEOUT_MS } = {}) {
  const pkg = loadCriPackage();
  const options = {
    'grpc.max_receive_message_length': MAX_MSG_BYTES,
    // What the kubelet sends as :authority on a unix socket.
    'grpc.default_authority': 'localhost',
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
