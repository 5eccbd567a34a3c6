// Calls to an agent or a sandboxd with the fleet token, as the benchmarks'
// setup and checks make them; the measured loops send `headers` themselves.
import type { Pool } from 'undici';

export interface FleetCaller {
  /** The fleet token and a JSON content type. */
  readonly headers: Readonly<Record<string, string>>;
  /** One call, its answer read whole. */
  call(
    pool: Pool,
    method: 'GET' | 'PUT' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string }>;
}

export function fleetCaller(token: string): FleetCaller {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  return {
    headers,
    async call(pool, method, path, body) {
      const res = await pool.request({
        method,
        path,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.statusCode, text: await res.body.text() };
    },
  };
}
