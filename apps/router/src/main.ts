#!/usr/bin/env node
// The router's entry point. The Node.js check runs before anything heavy is
// loaded (static imports are evaluated before a module's body, so the real
// process lives behind a dynamic import).
import { requireSupportedNode } from '@warmpool/runtime/node-version';

requireSupportedNode('router');
await import('./process.js');
