// The node's own verbs: its warm-pool targets (SetPools, behind the
// generation check), its info, and draining it. Every answer that carries a
// fresh info body is observed, so whoever watches the node sees it.
import { agentSetPoolsStrictSchema, type StaleGenerationBody } from '@warmpool/api';
import { readJsonBody, type Logger } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { GenerationGuard } from '../generation.js';
import type { AgentMetrics } from '../metrics.js';
import { infoFromAnswer, type NodeState } from '../node-state.js';
import type { SandboxdAnswer, SandboxdClient } from '../sandboxd/client.js';
import { isSandboxdUnavailable } from '../sandboxd/errors.js';
import { errorResponse, jsonResponse, passThrough, toResponse } from './responses.js';
import { BODY, bodyRefused, type Routes } from './route.js';
import { ANY_JSON, parseBody } from './strict-body.js';

export interface NodeRoutesDependencies {
  sandboxd: SandboxdClient;
  generations: GenerationGuard;
  state: NodeState;
  metrics: AgentMetrics;
  logger: Logger;
}

export function nodeApp({ route }: Routes, deps: NodeRoutesDependencies): Hono {
  const { sandboxd, generations, state, metrics, logger } = deps;
  /** sandboxd answered with a fresh info body (info, pools, drain): everyone watching the node sees it. */
  const passInfo = (answer: SandboxdAnswer): Response => {
    const info = infoFromAnswer(answer);
    if (info !== undefined) state.observe(info);
    return passThrough(answer);
  };
  const app = new Hono();
  app.put(
    '/v1/pools',
    route('set_pools', async (c) => {
      const raw = await readJsonBody(c, ANY_JSON, BODY);
      if (!raw.ok) return bodyRefused(raw);
      // Strict: sandboxd's pool fields warmpool supports pass on (warm_max, idle hibernate, archive); any other is 400.
      const body = parseBody(agentSetPoolsStrictSchema, raw.value);
      if (!body.ok) return toResponse(body.reply);
      const { generation, pools } = body.value;
      const json = JSON.stringify({ pools });
      const outcome = await generations.apply(
        generation,
        () => sandboxd.setPools(json),
        (answer) => answer.status >= 200 && answer.status < 300,
        (err) => isSandboxdUnavailable(err) && err.sent,
      );
      switch (outcome.outcome) {
        case 'not-recovered':
          return errorResponse(
            503,
            'GenerationNotRecovered',
            'the last applied generation is not known yet (the agent reads it back from its NodeInventory after a restart); retry shortly',
            undefined,
            { 'retry-after': '1' },
          );
        case 'stale': {
          metrics.stalePush();
          logger.warn('stale SetPools refused', { generation, appliedGeneration: outcome.appliedGeneration });
          const stale: StaleGenerationBody = {
            error: `generation ${generation} is older than the applied generation ${outcome.appliedGeneration}`,
            reason: 'StaleGeneration',
            appliedGeneration: outcome.appliedGeneration,
          };
          return jsonResponse(409, stale);
        }
        case 'applied':
          logger.info('pools set', { generation, pools: pools.length });
          return passInfo(outcome.result);
        case 'rejected':
          return passThrough(outcome.result);
      }
    }),
  );
  app.get(
    '/v1/info',
    route('info', async () => passInfo(await sandboxd.info())),
  );
  app.post(
    '/v1/drain',
    route('drain', async () => {
      logger.info('draining the node');
      return passInfo(await sandboxd.drain());
    }),
  );
  app.delete(
    '/v1/drain',
    route('undrain', async () => {
      logger.info('lifting the drain');
      return passInfo(await sandboxd.undrain());
    }),
  );
  return app;
}
