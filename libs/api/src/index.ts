export * from './meta.js';
export * from './crds.js';
export * from './sandboxd.js';
export * from './agent.js';
export * from './federation.js';
export * from './claims.js';
export * from './claim-jobs.js';
export * from './inventory-pools.js';
