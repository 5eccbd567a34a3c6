// The closed axes of a pool key as warmpool's templates name them: sandboxd's own sets (sandboxd.ts), under the
// names the pool model uses.
export {
  SANDBOX_NETS as POOL_NETS,
  SANDBOX_SIZES as POOL_SIZES,
  isSandboxNet as isPoolNet,
  isSandboxSize as isPoolSize,
  type SandboxNet as PoolNet,
  type SandboxSize as PoolSize,
} from './sandboxd.js';
