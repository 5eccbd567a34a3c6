export { startRouter, type RouterOptions, type RunningRouter } from './router.js';
export { createRouterApp, type RouterAppOptions } from './app.js';
export { CallerGate, credentialOf, type Credential, type SandboxAccessReviewer } from './caller.js';
export { SandboxResolver, type Resolution, type SandboxRoute } from './resolver.js';
export { targetOf, type Target } from './target.js';
export { FLAGS, validateConfig } from './config.js';
