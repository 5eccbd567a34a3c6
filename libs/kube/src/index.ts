export * from './errors.js';
export * from './keys.js';
export * from './logger.js';
export { Backoff, sleep } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
export {
  configureTransport,
  DEFAULT_REQUEST_IDLE_TIMEOUT_MS,
  KUBE_REQUEST_TIMEOUT_HELP,
  KubeTransport,
  transportFor,
} from './transport.js';
export type { KubeRequest, KubeTransportOptions, QueryValue } from './transport.js';
export * from './client.js';
export * from './retry.js';
export * from './pinned-status.js';
export { ObjectStore } from './store.js';
export type { ReadableStore } from './store.js';
export * from './lister.js';
export * from './informer.js';
export * from './leader-election.js';
export * from './kubeconfig.js';
export * from './access-review.js';
export { DONE, WorkQueue } from './workqueue.js';
export type { WorkOutcome, WorkQueueOptions } from './workqueue.js';
