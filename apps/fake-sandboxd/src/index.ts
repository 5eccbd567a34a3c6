export { FakeSandboxd, type Claim, type FakeSandboxdStats } from './core/fake-sandboxd.js';
export { DEFAULT_OPTIONS, type FakeSandboxdOptions } from './core/options.js';
export { SandboxdRefusal, type RefusalReason } from './core/errors.js';
export { createSandboxdApp, type SandboxdAppOptions } from './http/app.js';
export { startFakeSandboxd, type StartFakeSandboxdOptions, type RunningFakeSandboxd } from './start.js';
export { SandboxRuntimes, RUNTIME_DEFAULTS, type RuntimeSettings } from './core/runtime/runtimes.js';
export { SIMULATED_PROGRAMS } from './core/runtime/commands.js';
