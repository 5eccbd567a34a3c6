// What a process allocates, garbage included, by allocation site: V8's
// sampling heap profiler driven over the process's inspector (started with
// --inspect=127.0.0.1:<port>). The profiler samples one allocation per
// `intervalBytes` on average and weighs it by that, so a site's bytes are an
// estimate whose error shrinks with the bytes sampled; objects the young and
// old generation collections free are kept in the profile, as garbage is what
// a claim path's GC pays for.

import { isOwnCode } from './own-code.ts';

/** Where a process's inspector listens: the Node flag to start it with. */
export const inspectFlag = (port: number): string => `--inspect=127.0.0.1:${port}`;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

export interface Allocations {
  bytes: number;
  /** Bytes by site: the allocating function and its caller, `fn file:line < caller file:line`. */
  bySite: Map<string, number>;
  /**
   * Bytes by the innermost frame of the project's own code on the allocating stack (apps, libs, the bench's own
   * servers), whatever library or builtin allocated below it: what each of our functions costs, dependencies included.
   */
  byOwnFrame: Map<string, number>;
}

/** A connection to one process's inspector. */
export class AllocationSampler {
  readonly #socket: WebSocket;
  readonly #pending = new Map<number, { resolve(result: unknown): void; reject(err: Error): void }>();
  #nextId = 1;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const call = message.id === undefined ? undefined : this.#pending.get(message.id);
      if (call === undefined || message.id === undefined) return;
      this.#pending.delete(message.id);
      if (message.error !== undefined) call.reject(new Error(`inspector: ${message.error.message}`));
      else call.resolve(message.result);
    });
    // A process that exits mid-call (a crash under the bench) fails the calls waiting on it.
    socket.addEventListener('close', () => {
      for (const call of this.#pending.values()) call.reject(new Error('the inspector connection closed'));
      this.#pending.clear();
    });
  }

  static async connect(port: number): Promise<AllocationSampler> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
      webSocketDebuggerUrl: string;
    }>;
    const url = targets[0]?.webSocketDebuggerUrl;
    if (url === undefined) throw new Error(`no inspector target on port ${port}`);
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    const sampler = new AllocationSampler(socket);
    await sampler.#send('HeapProfiler.enable');
    return sampler;
  }

  /** Samples while `during` runs; what was allocated meanwhile. */
  async sample(during: () => Promise<void>, intervalBytes = 1_024): Promise<Allocations> {
    await this.#send('HeapProfiler.startSampling', {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await during();
    const { profile } = (await this.#send('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
    return allocationsOf(profile.head);
  }

  close(): void {
    this.#socket.close();
  }

  #send(method: string, params: object = {}): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#socket.send(JSON.stringify({ id, method, params }));
    });
  }
}

function allocationsOf(head: ProfileNode): Allocations {
  const bySite = new Map<string, number>();
  const byOwnFrame = new Map<string, number>();
  let bytes = 0;
  const walk = (node: ProfileNode, caller: string, own: string): void => {
    const name = frameName(node);
    const url = node.callFrame.url;
    const ownHere = isOwnCode(url) ? name : own;
    if (node.selfSize > 0) {
      bytes += node.selfSize;
      const site = `${name} < ${caller}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      byOwnFrame.set(ownHere, (byOwnFrame.get(ownHere) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, name, ownHere);
  };
  walk(head, '(root)', '(no frame of our own)');
  return { bytes, bySite, byOwnFrame };
}

/** `function file:line`, the file shortened to its package (or last two path segments). */
function frameName({ callFrame: { functionName, url, lineNumber } }: ProfileNode): string {
  const file = url
    .replace(/.*node_modules\//, '')
    .split('/')
    .slice(-2)
    .join('/');
  return `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

/** Adds `more` into `into`. */
export function addAllocations(into: Allocations, more: Allocations): void {
  into.bytes += more.bytes;
  for (const [site, bytes] of more.bySite) into.bySite.set(site, (into.bySite.get(site) ?? 0) + bytes);
  for (const [frame, bytes] of more.byOwnFrame) into.byOwnFrame.set(frame, (into.byOwnFrame.get(frame) ?? 0) + bytes);
}

/** The `count` sites that allocated most, as `bytes per claim  site` lines. */
export function topSites(
  allocations: Allocations,
  claims: number,
  count: number,
  by: 'bySite' | 'byOwnFrame' = 'bySite',
): string[] {
  return [...allocations[by]]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([site, bytes]) => `${(bytes / claims).toFixed(0).padStart(6)} B  ${site}`);
}
