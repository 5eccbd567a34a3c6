export { Batcher, type WaitOptions } from './batcher.js';
export type { Batch, BatchCloseReason, BatchReceipt } from './batch.js';
export { BatcherClosedError } from './errors.js';
export {
  DEFAULT_BATCH_OPTIONS,
  KARPENTER_BATCH_OPTIONS,
  resolveBatcherOptions,
  type BatcherOptions,
} from './options.js';
export { BatchWindow, type WindowDeadline } from './window.js';
export { SameTurn, type SameTurnOptions } from './same-turn.js';
