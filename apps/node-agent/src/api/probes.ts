// Health, readiness, metrics and the OpenAPI document: the routes that say
// how the agent is, none of which calls sandboxd.
import { Hono } from 'hono';
import type { AgentMetrics } from '../metrics.js';
import { openApiDocument } from './openapi.js';
import { errorResponse, jsonResponse } from './responses.js';
import type { Routes } from './route.js';

const plainOk = (): Response => new Response('ok', { status: 200, headers: { 'content-type': 'text/plain' } });

export function probesApp({ route }: Routes, deps: { metrics: AgentMetrics; notReadyReasons: () => string[] }): Hono {
  const { metrics } = deps;
  return new Hono()
    .get('/healthz', route('healthz', plainOk))
    .get(
      '/readyz',
      route('readyz', () => {
        const reasons = deps.notReadyReasons();
        return reasons.length === 0 ? plainOk() : errorResponse(503, 'NotReady', 'not ready', { reasons });
      }),
    )
    .get(
      '/metrics',
      route('metrics', async () => {
        return new Response(await metrics.render(), { status: 200, headers: { 'content-type': metrics.contentType } });
      }),
    )
    .get(
      '/openapi.json',
      route('openapi', () => jsonResponse(200, openApiDocument())),
    );
}
