export { createNodeAgent, DEFAULTS, type NodeAgent, type NodeAgentOptions } from './agent.js';
export { GenerationGuard, type GuardedOutcome } from './generation.js';
export {
  KubeInventoryWriter,
  FIELD_MANAGER,
  type InventoryWriter,
  type InventoryIdentity,
  type InventoryReadBack,
  type StatusWritten,
  type KubeInventoryWriterOptions,
} from './inventory/writer.js';
export { HEARTBEAT_JITTER, InventoryPublisher, RESET_APPLIED_GENERATION } from './inventory/publisher.js';
export { significantChange, snapshotOf, statusOf, urgentChange, type InventorySnapshot } from './inventory/snapshot.js';
export {
  SandboxdClient,
  parseSandboxdUrl,
  type SandboxdAnswer,
  type SandboxdClientOptions,
} from './sandboxd/client.js';
export { SandboxdUnavailableError, isSandboxdUnavailable } from './sandboxd/errors.js';
export { AgentMetrics } from './metrics.js';
export { OwnerAddress } from './owner-address.js';
export { FLAGS, validateConfig, advertiseAddressOf, type AgentConfig } from './config.js';
export {
  entriesOf,
  claimedByKeyOf,
  nodeClaimsReader,
  readNodeClaims,
  type PublishedEntries,
} from './inventory/entries.js';
