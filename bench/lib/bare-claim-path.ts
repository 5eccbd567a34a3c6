// The claim path's design with none of warmpool's code in it: what the hops
// of one claim cost on this machine, measured beside the control plane.
//
// One request in, one BullMQ job (Queue.add, a Worker of the same concurrency
// in this process), a reservation script, one POST /v1/claim to a node agent,
// a record script, the answer handed back in-process, one response out: the
// same libraries (node:http, BullMQ, ioredis with auto-pipelining, undici) and
// the same sequential round trips as a lone claim through the control plane,
// without access review, validation, the batcher, the coalescer, metrics or
// logs. Run by bench/claims.bench.ts as its own process:
//   node bench/lib/bare-claim-path.ts  (BARE_REDIS_URL, BARE_AGENTS, BARE_TOKEN, BARE_TEMPLATE, BARE_CONCURRENCY)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';

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
const QUEUE = 'bare-claims';

// The index's two scripts, reduced to their writes: reserve the claimRef (and the job's progress), record the grant.
const RESERVE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('HSET', KEYS[2], 'progress', ARGV[3])
  return 1
end
return 0`;
const RECORD = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'e', ARGV[1])
return 1`;

interface BareRedis extends Redis {
  reserve(ref: string, jobKey: string, jobId: string, ttlMs: number, progress: string): Promise<number>;
  record(ref: string, sandbox: string, events: string, grant: string, ttlMs: number, claimRef: string): Promise<number>;
}

const commands = new Redis({ ...connection, enableAutoPipelining: true }) as BareRedis;
commands.defineCommand('reserve', { numberOfKeys: 2, lua: RESERVE });
commands.defineCommand('record', { numberOfKeys: 3, lua: RECORD });

interface Order {
  claimRef: string;
  ttlSeconds: number;
}

const waiting = new Map<string, (answer: { status: number; body: string }) => void>();
const queue = new Queue<Order>(QUEUE, { connection });
let next = 0;

async function serve(job: Job<Order>): Promise<void> {
  const { claimRef, ttlSeconds } = job.data;
  const ttlMs = ttlSeconds * 1000;
  const id = job.id ?? '';
  await commands.reserve(`bare:ref:${claimRef}`, `${job.queueQualifiedName}:${id}`, id, ttlMs, '{}');
  const agent = agents[next++ % agents.length] as Pool;
  const res = await agent.request({
    method: 'POST',
    path: '/v1/claim',
    body: JSON.stringify({ template, ttl_seconds: ttlSeconds, claim_ref: claimRef }),
    headers: { authorization, 'content-type': 'application/json' },
  });
  const body = await res.body.text();
  if (res.statusCode === 200) {
    const grant = JSON.parse(body) as { id: string };
    await commands.record(`bare:ref:${claimRef}`, `bare:sandbox:${grant.id}`, 'bare:events', body, ttlMs, claimRef);
  }
  answer(id, res.statusCode, body);
}

function answer(id: string, status: number, body: string): void {
  waiting.get(id)?.({ status, body });
  waiting.delete(id);
}

const worker = new Worker<Order>(
  QUEUE,
  (job) => serve(job).catch((err: unknown) => answer(job.id ?? '', 500, String(err))),
  { connection, concurrency, drainDelay: 1 },
);

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

let sequence = 0;
async function claim(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = JSON.parse(await readBody(req)) as { ttlSeconds?: number };
  const jobId = `bare-${++sequence}`;
  const answered = new Promise<{ status: number; body: string }>((resolve) => waiting.set(jobId, resolve));
  const order: Order = { claimRef: randomBytes(8).toString('hex'), ttlSeconds: request.ttlSeconds ?? 3_600 };
  await queue.add('claim', order, { jobId, removeOnComplete: true, attempts: 2 });
  const { status, body } = await answered;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req, res) => {
  claim(req, res).catch((err: unknown) => {
    res.writeHead(500);
    res.end(String(err));
  });
});
await worker.waitUntilReady();
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  console.error(JSON.stringify({ msg: 'bare claim path serving', address: `127.0.0.1:${port}` }));
});
process.on('SIGTERM', () => {
  server.close();
  void Promise.allSettled([worker.close(), queue.close()]).then(() => {
    commands.disconnect();
    process.exit(0);
  });
});
