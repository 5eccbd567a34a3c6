// The module hooks behind agent-duties-off.ts: each duty is a set of exact
// rewrites of the built agent's modules (apps/node-agent/dist, and
// libs/runtime/dist for the process's default metrics), applied as they load.
// A rewrite whose text is not found fails the load.
import type { LoadHook } from 'node:module';

export interface DutiesOff {
  off: string[];
}

interface Rewrite {
  /** The end of the built module's path. */
  file: string;
  from: string;
  to: string;
}

const REWRITES: Record<string, Rewrite[]> = {
  // The claim route's declared access (the fleet token) is not asked.
  access: [
    {
      file: '/node-agent/dist/api/claim-route.js',
      from: 'const refused = this.#deps.admit(incoming.headers.authorization, incoming.socket);',
      to: 'const refused = undefined;',
    },
  ],
  // The request histogram is not observed, and an answer is not read for the owner address or a 429's fresh look.
  observe: [
    {
      file: '/node-agent/dist/api/claim-route.js',
      from: 'this.#deps.observe(status, this.#started);\n        this.#deps.answered(answer);',
      to: '',
    },
  ],
  // The body is still read and parsed; its check and the forwarded JSON are made once and reused.
  body: [
    {
      file: '/node-agent/dist/api/claim-route.js',
      from: 'const forwarded = forwardedOrRefused(json);',
      to: 'const forwarded = (globalThis.agentDutiesOffForwarded ??= forwardedOrRefused(json));',
    },
  ],
  // No bound on claims in flight, and each sandboxd call's deadline kept in a list that keeps nothing.
  bound: [
    {
      file: '/node-agent/dist/api/claim-route.js',
      from: 'if (!this.#deps.inFlight.tryAcquire()) {',
      to: 'this.#deps.sandboxd.claimInto(forwarded, this);\n            return;\n            if (!this.#deps.inFlight.tryAcquire()) {',
    },
    {
      file: '/node-agent/dist/sandboxd/client.js',
      from: 'new CollectingHandler(operation, deadlines, through)',
      to: 'new CollectingHandler(operation, { add() { return undefined; }, remove() { }, ms: 0 }, through)',
    },
  ],
  // sandboxd is polled once at start, never again; prom-client's default metrics are not collected.
  background: [
    {
      file: '/node-agent/dist/node-state.js',
      from: 'start() {\n        return this.#pollAndReschedule();',
      to: 'start() {\n        return this.#pollAndReschedule().then(() => { this.#closed = true; clearTimeout(this.#timer); });',
    },
    {
      file: '/runtime/dist/process-main.js',
      from: 'collectDefaultMetrics({ register: registry });',
      to: '',
    },
  ],
};

/** The duties that can be switched off (agent-duties-off.ts checks the import's query against them). */
export const DUTIES: readonly string[] = Object.keys(REWRITES);

let rewrites: Rewrite[] = [];

export function initialize({ off }: DutiesOff): void {
  rewrites = off.flatMap((duty) => REWRITES[duty] ?? []);
}

export const load: LoadHook = async (url, context, nextLoad) => {
  const loaded = await nextLoad(url, context);
  const mine = rewrites.filter(({ file }) => url.endsWith(file));
  if (mine.length === 0 || loaded.source === undefined || loaded.source === null) return loaded;
  let source =
    typeof loaded.source === 'string' ? loaded.source : new TextDecoder().decode(loaded.source as Uint8Array);
  for (const { file, from, to } of mine) {
    if (!source.includes(from)) throw new Error(`agent-duties-off: ${file} no longer holds ${JSON.stringify(from)}`);
    source = source.replace(from, to);
  }
  return { ...loaded, source };
};
