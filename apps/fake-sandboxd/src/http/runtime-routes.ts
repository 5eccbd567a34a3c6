// The sandbox runtime contract (docs/sandbox-runtime.md) over the simulated
// runtimes: upstream's five operations under /v1/sandboxes/{id}/runtime/,
// each taken only with that sandbox's own token. No bearer is 401; a wrong
// token is 404, the same answer as an unknown id (as release and renew).
// The operations themselves: runtime-execute.ts, runtime-files.ts.
import type { RuntimeOperation } from '@warmpool/api';
import { bearerToken, tokensEqual } from '@warmpool/runtime';
import { Hono, type Handler } from 'hono';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';
import { refuse, type Served } from './runtime-answers.js';
import { execute } from './runtime-execute.js';
import { download, exists, list, upload } from './runtime-files.js';

const BASE = '/v1/sandboxes/:id/runtime';

/** Counts the operation, checks the sandbox's own token, and serves it on that sandbox's workspace. */
function sandboxTokenOnly(
  core: FakeSandboxd,
  runtimes: SandboxRuntimes,
  operation: RuntimeOperation,
  serve: Served,
): Handler {
  return (c) => {
    runtimes.count(operation);
    const presented = bearerToken(c.req.header('authorization'));
    if (presented === undefined) return refuse(c, 401, 'Unauthenticated', 'missing bearer token');
    const id = c.req.param('id') ?? '';
    const claim = core.get(id);
    if (claim === undefined || !tokensEqual(presented, claim.token))
      return refuse(c, 404, 'SandboxNotFound', 'unknown sandbox');
    return serve(c, runtimes.workspaceOf(id));
  };
}

export function runtimeApp(core: FakeSandboxd, runtimes: SandboxRuntimes): Hono {
  const scoped = (operation: RuntimeOperation, serve: Served): Handler =>
    sandboxTokenOnly(core, runtimes, operation, serve);
  return new Hono()
    .post(`${BASE}/execute`, scoped('execute', execute(runtimes)))
    .post(`${BASE}/upload`, scoped('upload', upload))
    .get(`${BASE}/download/*`, scoped('download', download))
    .get(`${BASE}/list/*`, scoped('list', list))
    .get(`${BASE}/exists/*`, scoped('exists', exists));
}
