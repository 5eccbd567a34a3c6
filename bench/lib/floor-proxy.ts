// The floor of a Node hop, as source for `node --input-type=module -e`: the
// barest proxy (node:http + undici, no auth, no validation, no framework),
// alone or inside a node agent's process.
import { pathToFileURL } from 'node:url';

/**
 * The floor: a raw proxy as small as a Node hop gets, run with `node --input-type=module -e`; `upstream` as the agent's
 * --sandboxd-url.
 */
export function floorProxySource(
  upstream: string,
  listen: { port: number; msg: string; ownsProcess: boolean } = { port: 0, msg: 'floor serving', ownsProcess: true },
): string {
  const pool = upstream.startsWith('unix:')
    ? `new Pool('http://localhost', { socketPath: ${JSON.stringify(upstream.slice('unix:'.length))}, connections: 128 })`
    : `new Pool(${JSON.stringify(upstream)}, { connections: 128 })`;
  return `
    import { createServer } from 'node:http';
    import { Pool } from ${JSON.stringify(import.meta.resolve('undici'))};
    const upstream = ${pool};
    const server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const out = [];
        let status = 0;
        upstream.dispatch({ method: req.method, path: req.url, headers: { authorization: req.headers.authorization, 'content-type': 'application/json' }, body: Buffer.concat(chunks) }, {
          onRequestStart() {},
          onResponseStart(_c, s) { status = s; },
          onResponseData(_c, d) { out.push(d); },
          onResponseEnd() { const b = Buffer.concat(out); res.writeHead(status, { 'content-type': 'application/json', 'content-length': b.length }); res.end(b); },
          onResponseError(_c, e) { res.writeHead(503); res.end(String(e)); },
        });
      });
    });
    await new Promise((listening, failed) => { server.once('error', failed); server.listen(${listen.port}, '127.0.0.1', listening); });
    console.error(JSON.stringify({ msg: ${JSON.stringify(listen.msg)}, address: '127.0.0.1:' + server.address().port }));
    ${listen.ownsProcess ? "process.on('SIGTERM', () => { server.close(); upstream.close(); process.exit(0); });" : ''}
  `;
}

/**
 * The floor's proxy inside a running node agent's process, listening on `port`. The agent's own main runs, with
 * `agentArgs`, once the floor listens (a taken port fails the process before the agent starts). So the floor's claims
 * pay whatever the agent's process carries (its heap, its code, its timers, its Node flags) but none of the agent's
 * claim path: what this path costs above the floor alone is the process; what the agent costs above it, its claim path.
 */
export function floorInAgentSource(upstream: string, port: number, agentMain: string, agentArgs: string[]): string {
  return `${floorProxySource(upstream, { port, msg: 'floor in agent serving', ownsProcess: false })}
    process.argv.splice(1, Infinity, ${JSON.stringify(agentMain)}, ...${JSON.stringify(agentArgs)});
    await import(${JSON.stringify(pathToFileURL(agentMain).href)});
  `;
}

/**
 * The floor's proxy in a worker thread of a running node agent's process, listening on `port`: the process is the
 * agent's (its CPU counts the worker's), but the floor's code runs on its own isolate, with its own heap and its own
 * inline caches, beside none of the agent's code. The agent's main starts once the worker listens.
 */
export function floorInAgentWorkerSource(
  upstream: string,
  port: number,
  agentMain: string,
  agentArgs: string[],
): string {
  const floor = floorProxySource(upstream, { port, msg: 'floor in worker serving', ownsProcess: false });
  return inWorkerBesideAgentSource(floor, agentMain, agentArgs);
}

/**
 * Module code that runs `workerSource` in a worker thread and, once it has run to its end (it listens by then), the
 * node agent's main with `agentArgs` on the main thread.
 */
export function inWorkerBesideAgentSource(workerSource: string, agentMain: string, agentArgs: string[]): string {
  const inWorker = `${workerSource}
    (await import('node:worker_threads')).parentPort.postMessage('listening');
  `;
  return `
    import { Worker } from 'node:worker_threads';
    const worker = new Worker(new URL('data:text/javascript,' + encodeURIComponent(${JSON.stringify(inWorker)})));
    await new Promise((listening, failed) => {
      worker.once('message', listening);
      worker.once('error', failed);
      worker.once('exit', (code) => failed(new Error('the worker exited with ' + code + ' before it listened')));
    });
    worker.unref();
    process.argv.splice(1, Infinity, ${JSON.stringify(agentMain)}, ...${JSON.stringify(agentArgs)});
    await import(${JSON.stringify(pathToFileURL(agentMain).href)});
  `;
}

/** Module code, for a floor's `alongside`, that imports the modules at `urls` and starts nothing of them. */
export function modulesLoadedSource(...urls: string[]): string {
  return urls.map((url, i) => `;globalThis.loaded${i} = await import(${JSON.stringify(url)});`).join('');
}
