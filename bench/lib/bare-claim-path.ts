// The claim path's design with none of warmpool's code in it: what its hops
// cost on this machine, measured beside the control plane.
//
// Requests read in one event-loop turn form a batch; while a batch is out,
// the next gathers until it is answered or 20 ms have passed; once it is
// answered, up to BARE_REJOIN_MS (default 5) more for as many new requests as
// it answered (the control plane's batch hold, --claim-batch-rejoin). Each batch is one BullMQ job (Queue.add, a Worker of the
// same concurrency in this process) whose handler runs one reservation script
// for all its claims, one request per node agent (POST /v1/claim for a lone
// claim, POST /v1/claims otherwise), one record script, and hands each answer
// back in-process; one response per request. The same libraries (node:http,
// BullMQ, ioredis with auto-pipelining, undici) and the same round trips as
// the control plane, without access review, validation, metrics, logs, the
// nodes-are-the-truth checks or any retry. Run by bench/claims.bench.ts as its
// own process:
//   node bench/lib/bare-claim-path.ts  (BARE_REDIS_URL, BARE_AGENTS, BARE_TOKEN, BARE_TEMPLATE, BARE_CONCURRENCY,
//   BARE_SCRIPTS, BARE_REJOIN_MS)
// BARE_SCRIPTS=0 leaves the two scripts out (no reservation, no record): what the design's exactly-once index
// costs it, measured by its absence.
// BARE_IN_PROCESS=1: imported into another program's process (the control plane's, by Node's --import), so it
// listens on BARE_PORT and leaves the process's signals to its host; its connections go when the process does.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { PerformanceObserver } from 'node:perf_hooks';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { BARE_RECORD, BARE_RESERVE } from './bare-index-scripts.ts';

// As the control plane does (apps/control-plane/src/redis/fast-string-prototype.ts): ioredis 6.0.0 leaves
// String.prototype a dictionary, which makes every string method slow; this makes it fast again, so the design's
// floor does not carry a cliff the control plane avoids.
(Object.create(String.prototype) as Record<string, unknown>)['warmpoolFastStringPrototype'] = true;

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};

const redisUrl = new URL(env('BARE_REDIS_URL'));
const connection = { host: redisUrl.hostname, port: Number(redisUrl.port), maxRetriesPerRequest: null };
const agents = env('BARE_AGENTS')
  .split(',')
  .map((address) => new Pool(`http://${address}`, { connections: 64, pipelining: 1 }));
const authorization = `Bearer ${env('BARE_TOKEN')}`;
const template = env('BARE_TEMPLATE');
const concurrency = Number(process.env['BARE_CONCURRENCY'] ?? 64);
const scripts = process.env['BARE_SCRIPTS'] !== '0';
const rejoinMs = Number(process.env['BARE_REJOIN_MS'] ?? 5);
const QUEUE = 'bare-claims';

interface BareRedis extends Redis {
  reserve(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  record(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
}

const commands = new Redis({ ...connection, enableAutoPipelining: true }) as BareRedis;
commands.defineCommand('reserve', { lua: BARE_RESERVE });
commands.defineCommand('record', { lua: BARE_RECORD });

interface Batch {
  claims: Array<{ claimRef: string; ttlSeconds: number }>;
}
interface Answer {
  status: number;
  body: string;
}
type Reply = (answers: readonly Answer[]) => void;

const replies = new Map<string, Reply>();
const queue = new Queue<Batch>(QUEUE, { connection });
let nextAgent = 0;

async function serve(job: Job<Batch>): Promise<readonly Answer[]> {
  const { claims } = job.data;
  const id = job.id ?? '';
  const ttlMs = (claims[0]?.ttlSeconds ?? 3_600) * 1000;
  const refs = claims.map((c) => `bare:ref:${c.claimRef}`);
  if (scripts) await commands.reserve(1 + refs.length, `${job.queueQualifiedName}:${id}`, ...refs, id, ttlMs, '{}');
  const byAgent = new Map<Pool, number[]>();
  claims.forEach((_, i) => {
    const agent = agents[nextAgent++ % agents.length] as Pool;
    byAgent.set(agent, [...(byAgent.get(agent) ?? []), i]);
  });
  const answers: Answer[] = claims.map(() => ({ status: 502, body: '' }));
  await Promise.all(
    [...byAgent].map(async ([agent, indexes]) => {
      const bodies = indexes.map((i) =>
        JSON.stringify({ template, ttl_seconds: claims[i]?.ttlSeconds, claim_ref: claims[i]?.claimRef }),
      );
      const lone = bodies.length === 1;
      const res = await agent.request({
        method: 'POST',
        path: lone ? '/v1/claim' : '/v1/claims',
        body: lone ? bodies[0] : `{"claims":[${bodies.join(',')}]}`,
        headers: { authorization, 'content-type': 'application/json' },
      });
      const text = await res.body.text();
      if (lone) answers[indexes[0] as number] = { status: res.statusCode, body: text };
      else
        for (const line of text.split('\n').filter(Boolean)) {
          const item = JSON.parse(line) as { index: number; status: number; body: unknown };
          answers[indexes[item.index] as number] = { status: item.status, body: JSON.stringify(item.body) };
        }
    }),
  );
  const served = answers.flatMap((a, i) => (a.status === 200 ? [{ ref: refs[i] as string, body: a.body }] : []));
  if (scripts && served.length > 0)
    await commands.record(
      1 + served.length,
      'bare:unused',
      ...served.map((s) => s.ref),
      ttlMs,
      ...served.map((s) => s.body),
    );
  return answers;
}

function reply(id: string, answers: readonly Answer[]): void {
  replies.get(id)?.(answers);
  replies.delete(id);
}

const worker = new Worker<Batch>(
  QUEUE,
  async (job) => {
    const id = job.id ?? '';
    try {
      reply(id, await serve(job));
    } catch (err) {
      reply(
        id,
        job.data.claims.map(() => ({ status: 500, body: String(err) })),
      );
    }
  },
  { connection, concurrency, drainDelay: 1 },
);

/**
 * The batch hold: claims of one turn go together; while a batch is out, until it is answered or 20 ms passed; once
 * answered, until as many claims came as it answered or the rejoin gap passed (bounded by the 20 ms too).
 */
interface Waiting {
  claim: { claimRef: string; ttlSeconds: number };
  answer(a: Answer): void;
}
let gathering: Waiting[] = [];
let out = 0;
let flushScheduled = false;
let holdTimer: NodeJS.Timeout | undefined;
let rejoinAt: number | undefined;
let rejoinTimer: NodeJS.Timeout | undefined;
let sequence = 0;

function enqueue(waiting: Waiting): void {
  gathering.push(waiting);
  if (rejoinAt !== undefined) {
    if (gathering.length >= rejoinAt) send();
    else holdTimer ??= setTimeout(send, 20);
  } else if (out === 0) {
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(() => {
        flushScheduled = false;
        if (out === 0 && rejoinAt === undefined) send();
      });
    }
  } else holdTimer ??= setTimeout(send, 20);
}

/**
 * The batch out is answered, all its claims at once (so none of its callers is back yet): they ask again within a
 * round trip.
 */
function awaitRejoin(answered: number): void {
  if (rejoinMs === 0) {
    send();
    return;
  }
  // The held claims go with the callers it answered, not in a batch of their own ahead of them.
  rejoinAt = gathering.length + answered;
  rejoinTimer = setTimeout(send, rejoinMs);
}

function send(): void {
  clearTimeout(holdTimer);
  holdTimer = undefined;
  clearTimeout(rejoinTimer);
  rejoinTimer = undefined;
  rejoinAt = undefined;
  if (gathering.length === 0) return;
  const batch = gathering;
  gathering = [];
  out++;
  const jobId = `bare-${++sequence}`;
  replies.set(jobId, (answers) => {
    batch.forEach((w, i) => w.answer(answers[i] ?? { status: 502, body: '' }));
    if (--out === 0) awaitRejoin(batch.length);
  });
  queue
    .add('batch', { claims: batch.map((w) => w.claim) }, { jobId, removeOnComplete: true, attempts: 2 })
    .catch((err: unknown) =>
      reply(
        jobId,
        batch.map(() => ({ status: 503, body: String(err) })),
      ),
    );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function claim(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = JSON.parse(await readBody(req)) as { ttlSeconds?: number };
  const { status, body } = await new Promise<Answer>((answer) =>
    enqueue({ claim: { claimRef: randomBytes(8).toString('hex'), ttlSeconds: request.ttlSeconds ?? 3_600 }, answer }),
  );
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Its GC pauses so far (GET /gc), as the control plane's nodejs_gc_duration_seconds counts them: the same observer. */
const gc = { count: 0, ms: 0, over10ms: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count++;
    gc.ms += entry.duration;
    if (entry.duration > 10) gc.over10ms++;
  }
}).observe({ entryTypes: ['gc'] });

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/gc') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(gc));
    return;
  }
  // The batches sent so far: the bench's mean batch size beside the control plane's.
  if (req.method === 'GET' && req.url === '/batches') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count: sequence }));
    return;
  }
  claim(req, res).catch((err: unknown) => {
    res.writeHead(500);
    res.end(String(err));
  });
});
await worker.waitUntilReady();
const inProcess = process.env['BARE_IN_PROCESS'] === '1';
server.listen(inProcess ? Number(env('BARE_PORT')) : 0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  console.error(JSON.stringify({ msg: 'bare claim path serving', address: `127.0.0.1:${port}` }));
});
if (!inProcess)
  process.on('SIGTERM', () => {
    server.close();
    void Promise.allSettled([worker.close(), queue.close()]).then(() => {
      commands.disconnect();
      process.exit(0);
    });
  });
