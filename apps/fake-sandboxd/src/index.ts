export { FakeSandboxd, type Claim, type FakeSandboxdStats } from './core/fake-sandboxd.js';
export { DEFAULT_OPTIONS, type FakeSandboxdOptions } from './core/options.js';
export { SandboxdRefusal, type RefusalReason } from './core/errors.js';
export { createSandboxdApp, type SandboxdAppOptions } from './http/app.js';
export { startFakeSandboxd, type StartFakeSandboxdOptions, type RunningFakeSandboxd } from './start.js';
