// The operator's verbs (root token only): the pool targets, the node's info,
// drain, and the Prometheus scrape.
import { INVALID_BODY_MESSAGE, MAX_BODY_BYTES, strictSetPoolsRequestSchema } from '@warmpool/api';
import { readJsonBody, type Logger } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';
import { fail, refused, rootOnly, type Env } from './access.js';
import type { RootAuth } from './auth.js';
import { NodeMetrics } from './metrics.js';

const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

/** `PUT /v1/pools`, `GET /v1/info`, `POST|DELETE /v1/drain`. */
export function operatorApp(core: FakeSandboxd, auth: RootAuth, logger: Logger): Hono<Env> {
  const root = rootOnly(auth);
  return new Hono<Env>()
    .on('PUT', ['/v1/pools'], root, async (c) => {
      // Strict, as the daemon decodes operator bodies: a mistyped field is a 400, and nothing applies unless all is valid.
      const body = await readJsonBody(c, strictSetPoolsRequestSchema, BODY);
      if (!body.ok) return fail(c, 400, body.error);
      try {
        const { trimmed } = core.replacePools(body.value.pools);
        logger.info('pools set', { pools: body.value.pools.length, trimmed });
        // The daemon answers once the VMs it trimmed are destroyed, with the info of that moment.
        await core.awaitTrim(trimmed);
        return c.json(core.info());
      } catch (err) {
        return refused(c, err);
      }
    })
    .on('GET', ['/v1/info'], root, (c) => c.json(core.info()))
    .on('POST', ['/v1/drain'], root, (c) => {
      logger.info('draining');
      return c.json(core.drain());
    })
    .on('DELETE', ['/v1/drain'], root, (c) => {
      logger.info('drain lifted');
      return c.json(core.undrain());
    });
}

/** `GET /metrics`: the registry is built on the first scrape. */
export function metricsApp(core: FakeSandboxd, auth: RootAuth, runtimes: SandboxRuntimes | undefined): Hono<Env> {
  let metrics: NodeMetrics | undefined;
  return new Hono<Env>().on('GET', ['/metrics'], rootOnly(auth), async (c) => {
    metrics ??= new NodeMetrics(core, runtimes);
    return c.text(await metrics.render(), 200, { 'content-type': metrics.contentType });
  });
}
