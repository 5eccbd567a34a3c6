// The control plane's public surface: the composition root and its config.
// Specs reach the internals through test/support/internals.ts.
export { createControlPlane, COMPONENT } from './control-plane.js';
export type { ControlPlane, ControlPlaneOptions } from './options.js';
export { DEFAULT_LEASE_NAME, defaultIdentity, type ControlPlaneSettings } from './config/settings.js';
export { FLAGS, SUMMARY, type ControlPlaneConfig } from './config/flags.js';
export { validateConfig, type ValidatedConfig } from './config/validate.js';

// What the benchmarks (bench/) drive in-process: the Sandbox API's view and reader, the federation transport.
export { SandboxView, type SandboxChange, type NodeReport, type SandboxViewOptions } from './sandbox-api/view.js';
export { SandboxReader, type SandboxReaderOptions } from './sandbox-api/reader.js';
export { type SandboxFacts } from './sandbox-api/sandbox-object.js';
export { FederationKeys, DEFAULT_FEDERATION_PREFIX } from './federation/keys.js';
export { FederationReporter, type ReporterOptions } from './federation/reporter.js';
export { FederationWatcher, type WatcherOptions } from './federation/watcher.js';
// The warm-pool run over in-memory caches (bench/warmpool-run.bench.ts).
export { WarmPoolReconciler, type WarmPoolReconcilerOptions } from './controllers/warmpool/reconciler.js';
export { WarmPoolMetrics, type SpecAnswerStage } from './controllers/warmpool/metrics.js';
export { GenerationSource, MemoryEpochStore } from './generation/generation.js';
export { addressCheckOf } from './nodes/addresses.js';
// The claim index's scripts against the bare design's (bench/claim-index-scripts.bench.ts).
export { ClaimIndex } from './provisioning/claim-index.js';
// A pool's batch hold on synthetic callers (bench/claim-batch-hold.bench.ts).
export { Provisioner, type PendingClaim } from './provisioning/provisioner.js';
