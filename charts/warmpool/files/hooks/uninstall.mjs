// helm uninstall's hooks, run by Node in the control-plane image with the
// hook's ServiceAccount (the chart's templates/uninstall-hooks.yaml):
//
//   release-claims  (pre-delete) deletes every SandboxClaim warmpool serves
//                   (Ready=True with warmpool's reason Claimed, or the
//                   finalizer earlier versions put on the claims they served)
//                   while the control plane still runs, so it releases each
//                   sandbox on its node as it sees the deletion, and waits
//                   until they are gone; a claim still held by an earlier
//                   version's finalizer at the deadline loses it here (logged:
//                   its sandbox may outlive it) instead of blocking its
//                   namespace and the CRD forever.
//   forget-nodes    (post-delete) waits until the release's node agents are
//                   gone, then deletes the NodeInventories they published.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

const FINALIZER = 'warmpool.dev/release-sandbox';
const CLAIMS = '/apis/extensions.agents.x-k8s.io/v1beta1/sandboxclaims';
const INVENTORIES = '/apis/warmpool.dev/v1alpha1/nodeinventories';
const SA = '/var/run/secrets/kubernetes.io/serviceaccount';
const deadline = Date.now() + Number(process.env.TIMEOUT_SECONDS ?? '120') * 1000;

const log = (msg, fields = {}) =>
  console.log(JSON.stringify({ ts: new Date().toISOString(), component: 'uninstall-hook', msg, ...fields }));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function call(method, path, body) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: process.env.KUBERNETES_SERVICE_HOST,
        port: process.env.KUBERNETES_SERVICE_PORT,
        method,
        path,
        ca: readFileSync(`${SA}/ca.crt`),
        headers: {
          authorization: `Bearer ${readFileSync(`${SA}/token`, 'utf8').trim()}`,
          accept: 'application/json',
          ...(payload === undefined ? {} : { 'content-type': 'application/merge-patch+json' }),
        },
        timeout: 15_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : {} }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function list(path) {
  const res = await call('GET', path);
  if (res.status === 404) return []; // the kind is not installed
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.items ?? [];
}

const held = (claim) => (claim.metadata.finalizers ?? []).includes(FINALIZER);
const served = (claim) =>
  (claim.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True' && c.reason === 'Claimed');
const ours = (claim) => held(claim) || served(claim);
const where = (o) => `${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const itemPath = (base, o) =>
  o.metadata.namespace
    ? base.replace(/\/([a-z]+)$/, `/namespaces/${o.metadata.namespace}/$1/${o.metadata.name}`)
    : `${base}/${o.metadata.name}`;

async function releaseClaims() {
  const claims = (await list(CLAIMS)).filter(ours);
  log('releasing claims', { count: claims.length });
  for (const claim of claims) {
    const res = await call('DELETE', itemPath(CLAIMS, claim));
    if (res.status >= 300 && res.status !== 404)
      log('cannot delete claim', { claim: where(claim), status: res.status });
  }
  const deleted = new Set(claims.map((claim) => claim.metadata.uid));
  for (;;) {
    const left = (await list(CLAIMS)).filter((claim) => deleted.has(claim.metadata.uid));
    // Without an earlier version's finalizer a claim goes at once: the control plane releases its sandbox as it sees
    // the deletion, within milliseconds, long before helm gets to stopping it.
    if (left.length === 0) return log('every claim deleted');
    if (Date.now() >= deadline) {
      for (const claim of left.filter(held)) {
        log('claim not released in time: lifting its finalizer; its sandbox may outlive it', { claim: where(claim) });
        const finalizers = (claim.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
        await call('PATCH', itemPath(CLAIMS, claim), {
          metadata: { finalizers, resourceVersion: claim.metadata.resourceVersion },
        });
      }
      return;
    }
    await sleep(500);
  }
}

async function forgetNodes() {
  const namespace = readFileSync(`${SA}/namespace`, 'utf8').trim();
  const selector = encodeURIComponent(process.env.AGENT_SELECTOR ?? '');
  for (;;) {
    const agents = await list(`/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`);
    if (agents.length === 0) break;
    if (Date.now() >= deadline)
      return log('node agents still running: NodeInventories left', { agents: agents.length });
    await sleep(500);
  }
  const inventories = await list(INVENTORIES);
  for (const inventory of inventories) {
    const res = await call('DELETE', itemPath(INVENTORIES, inventory));
    if (res.status >= 300 && res.status !== 404)
      log('cannot delete inventory', { inventory: where(inventory), status: res.status });
  }
  log('NodeInventories deleted', { count: inventories.length });
}

const mode = process.argv[2];
const run = mode === 'release-claims' ? releaseClaims : mode === 'forget-nodes' ? forgetNodes : undefined;
if (run === undefined) {
  console.error('usage: uninstall.mjs release-claims|forget-nodes');
  process.exit(2);
}
run().then(
  () => process.exit(0),
  (error) => {
    log('hook failed', { err: String(error?.stack ?? error) });
    process.exit(1);
  },
);
