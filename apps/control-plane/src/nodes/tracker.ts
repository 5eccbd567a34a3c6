// What the driver knows about each node: where its agent is, whether its
// inventory is fresh, whether the agent keeps failing, and the latest counts
// it reported. Placement takes only the healthy ones.
//
// Freshness is judged on this process's clock, never by comparing the
// agent's publishedAt with our wall clock (beyond a first look): we note when
// we saw publishedAt change, and an inventory is stale once --stale-after has
// passed since without another change. Agents republish well within that.
import { inventoryPoolsOf, poolKeyId, type InventoryPool, type NodeInfo, type NodeInventory } from '@warmpool/api';
import { nodeRoom } from '@warmpool/pool-model';
import { messageOf, parseHostPort, type Clock } from '@warmpool/runtime';
import type { AddressCheck } from './addresses.js';
import { ViewCache, type Built } from './view-cache.js';

/** The signature of what a node reports as its targets (target > 0 only). */
export function reportedSig(pools: readonly InventoryPool[]): string {
  const entries: string[] = [];
  for (const pool of pools) if (pool.target > 0) entries.push(`${poolKeyId(pool)}=${pool.target}`);
  // Sorting the entries themselves is canonical too (equal sets, equal strings); it is only ever
  // compared with other reportedSig()s, never with a desired set's sig.
  entries.sort();
  return entries.join(';');
}

export type Exclusion =
  'stale' | 'failing' | 'draining' | 'no-address' | 'unverified-address' | 'impossible-generation';

export interface Observation {
  pools: readonly InventoryPool[];
  claimed: number;
  draining: boolean;
  atCapacity: boolean;
  /** Local time (clock ms) when it was received. */
  at: number;
  source: 'inventory' | 'agent';
  /** reportedSig(pools), made once here rather than by every reconcile that compares it. */
  reported: string;
}

export interface NodeView {
  name: string;
  address: string;
  eligible: boolean;
  exclusion: Exclusion | undefined;
  /** Warm sandboxes the node can still take across all pools: capacity − claimed, Infinity when unknown. */
  room: number;
  /** The best current view of its pools, if any. */
  observation: Observation | undefined;
  failures: number;
  lastError: string | undefined;
  /** The highest generation the node says it applied (inventory, or a 409 of its agent). */
  appliedGeneration: number | undefined;
  /** Why spec.address is not an address of this node (see node-addresses.ts), when it is not. */
  addressProblem: string | undefined;
}

interface NodeRecord {
  name: string;
  /** The NodeInventory object last observed (an informer replaces it on every change). */
  source: NodeInventory | undefined;
  address: string;
  addressValid: boolean;
  addressProblem: string | undefined;
  capacity: number | undefined;
  publishedAt: string | undefined;
  freshUntil: number;
  failures: number;
  lastError: string | undefined;
  inventory: Observation | undefined;
  agent: Observation | undefined;
  /** status.appliedGeneration as last read. */
  inventoryApplied: number | undefined;
  /** What its agent's last 409 said it applied; cleared when the inventory's number changes. */
  refusedWith: number | undefined;
}

export interface NodeTrackerOptions {
  clock: Clock;
  staleAfterMs: number;
  /** Consecutive failed calls (pushes or probes) after which a node leaves placement. */
  failureThreshold: number;
  /** An agent's own answer is preferred over the inventory while it is younger than this. */
  agentObservationTtlMs: number;
  /**
   * The highest generation any leader can have issued (GenerationSource.highestIssued): a node reporting more is out.
   */
  highestIssued?: () => number | undefined;
}

export function observationOf(info: NodeInfo, at: number): Observation {
  const pools = inventoryPoolsOf(info);
  return {
    pools,
    claimed: info.claimed,
    draining: info.draining === true,
    atCapacity: info.at_capacity === true,
    at,
    source: 'agent',
    reported: reportedSig(pools),
  };
}

export class NodeTracker {
  readonly #options: NodeTrackerOptions;
  readonly #records = new Map<string, NodeRecord>();
  #retired: string[] = [];
  /** The views, rebuilt only for the records that changed (or whose time came). */
  readonly #cache = new ViewCache<NodeView>();

  constructor(options: NodeTrackerOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#records.size;
  }

  /**
   * Brings the records in line with the inventories, and each address with what its Node vouches
   * for (`checkAddress`); returns the records that went (with their address). Every view is built afresh at the next
   * read: this is the resync, which trusts nothing kept.
   */
  sync(inventories: readonly NodeInventory[], checkAddress: AddressCheck): Array<{ name: string; address: string }> {
    const now = this.#options.clock.now();
    this.#cache.staleAll(this.#records.keys());
    const seen = new Set<string>();
    for (const inventory of inventories) {
      const name = inventory.metadata?.name;
      if (name === undefined || name === '') continue;
      seen.add(name);
      this.#observe(name, inventory, checkAddress, now);
    }
    const removed: Array<{ name: string; address: string }> = [];
    for (const [name, record] of this.#records) {
      if (seen.has(name)) continue;
      this.#remove(name);
      removed.push({ name, address: record.address });
    }
    return removed;
  }

  /**
   * sync() for the named nodes only (those an event touched): `inventory(name)` is its NodeInventory now, undefined
   * once deleted. Returns the records that went.
   */
  syncSome(
    names: Iterable<string>,
    inventory: (name: string) => NodeInventory | undefined,
    checkAddress: () => AddressCheck,
  ): Array<{ name: string; address: string }> {
    const now = this.#options.clock.now();
    let check: AddressCheck | undefined;
    const removed: Array<{ name: string; address: string }> = [];
    for (const name of names) {
      const found = inventory(name);
      const record = this.#records.get(name);
      if (found !== undefined) this.#observe(name, found, (check ??= checkAddress()), now);
      else if (record !== undefined) {
        this.#remove(name);
        removed.push({ name, address: record.address });
      }
    }
    return removed;
  }

  #observe(name: string, inventory: NodeInventory, checkAddress: AddressCheck, now: number): void {
    const before = this.#records.get(name);
    if (before?.source !== inventory) {
      this.#observeInventory(name, inventory, now);
      this.#cache.stale(name);
    }
    const record = this.#records.get(name);
    if (record === undefined) return;
    const problem = record.addressValid ? checkAddress(name, record.address) : undefined;
    if (problem !== record.addressProblem) this.#cache.stale(name);
    record.addressProblem = problem;
  }

  #remove(name: string): void {
    this.#records.delete(name);
    this.#cache.stale(name);
  }

  /** The node's view as of the last views(). */
  lastView(name: string): NodeView | undefined {
    return this.#cache.get(name);
  }

  /** The nodes whose view changed since the last call (undefined: any may have). */
  takeChangedViews(): ReadonlySet<string> | undefined {
    return this.#cache.takeChanged();
  }

  /** Addresses agents moved away from since the last call (their connections can go). */
  takeRetiredAddresses(): string[] {
    const retired = this.#retired;
    this.#retired = [];
    return retired;
  }

  /** A successful call: the agent is reachable, and this is what its node looks like now. */
  recordAnswer(name: string, info: NodeInfo): void {
    const record = this.#records.get(name);
    if (record === undefined) return;
    record.agent = observationOf(info, this.#options.clock.now());
    record.failures = 0;
    record.lastError = undefined;
    this.#cache.stale(name);
  }

  /** A failed call; true when this failure is the one that takes the node out of placement. */
  recordFailure(name: string, err: unknown): boolean {
    const record = this.#records.get(name);
    if (record === undefined) return false;
    record.failures++;
    record.lastError = messageOf(err);
    this.#cache.stale(name);
    return record.failures === this.#options.failureThreshold;
  }

  /** Its agent refused a push (409), saying it has applied `generation`. */
  recordRefusal(name: string, generation: number): void {
    const record = this.#records.get(name);
    if (record === undefined) return;
    record.refusedWith = generation;
    this.#cache.stale(name);
  }

  /** True when runs see this node through its NodeInventory: its agent has not answered within the observation TTL. */
  readsInventory(name: string): boolean {
    const agent = this.#records.get(name)?.agent;
    return agent === undefined || this.#options.clock.now() - agent.at > this.#options.agentObservationTtlMs;
  }

  /** The agent's own latest answer, if any. */
  agentObservation(name: string): Observation | undefined {
    return this.#records.get(name)?.agent;
  }

  view(name: string): NodeView | undefined {
    const record = this.#records.get(name);
    return record === undefined ? undefined : this.#view(record, this.#options.clock.now());
  }

  /** Every node, sorted by name (the same array until a view changes: read, never changed). */
  views(): readonly NodeView[] {
    const now = this.#options.clock.now();
    return this.#cache.views(
      now,
      this.#options.highestIssued?.(),
      () => this.#records.keys(),
      (name) => {
        const record = this.#records.get(name);
        return record === undefined ? undefined : this.#built(record, now);
      },
    );
  }

  /** A record's view, and what may change it with no change to the record (time, the issued generation). */
  #built(record: NodeRecord, now: number): Built<NodeView> {
    const view = this.#view(record, now);
    let until = now < record.freshUntil ? record.freshUntil : Number.POSITIVE_INFINITY;
    const agent = record.agent;
    const ttl = this.#options.agentObservationTtlMs;
    if (agent !== undefined && now - agent.at <= ttl) until = Math.min(until, agent.at + ttl);
    const issued = this.#options.highestIssued?.();
    const applied = view.appliedGeneration;
    return { view, until, aboveIssued: applied !== undefined && (issued === undefined || applied > issued) };
  }

  #view(record: NodeRecord, now: number): NodeView {
    const observation = this.#best(record, now);
    const applied = highest(record.inventoryApplied, record.refusedWith);
    const issued = this.#options.highestIssued?.();
    let exclusion: Exclusion | undefined;
    if (!record.addressValid) exclusion = 'no-address';
    else if (record.addressProblem !== undefined) exclusion = 'unverified-address';
    else if (now >= record.freshUntil) exclusion = 'stale';
    else if (applied !== undefined && issued !== undefined && applied > issued) exclusion = 'impossible-generation';
    else if (record.failures >= this.#options.failureThreshold) exclusion = 'failing';
    else if (observation?.draining === true) exclusion = 'draining';
    const claimed = observation?.claimed ?? 0;
    const room = nodeRoom(record.capacity, claimed);
    return {
      name: record.name,
      address: record.address,
      eligible: exclusion === undefined,
      exclusion,
      room,
      observation,
      failures: record.failures,
      lastError: record.lastError,
      appliedGeneration: applied,
      addressProblem: record.addressProblem,
    };
  }

  #best(record: NodeRecord, now: number): Observation | undefined {
    const { agent, inventory } = record;
    if (agent !== undefined && now - agent.at <= this.#options.agentObservationTtlMs) return agent;
    if (agent === undefined) return inventory;
    if (inventory === undefined) return agent;
    return agent.at >= inventory.at ? agent : inventory;
  }

  #observeInventory(name: string, inventory: NodeInventory, now: number): void {
    let record = this.#records.get(name);
    const address = inventory.spec?.address ?? '';
    if (record === undefined) {
      record = {
        name,
        source: undefined,
        address: '',
        addressValid: false,
        addressProblem: undefined,
        capacity: undefined,
        publishedAt: undefined,
        freshUntil: Number.NEGATIVE_INFINITY,
        failures: 0,
        lastError: undefined,
        inventory: undefined,
        agent: undefined,
        inventoryApplied: undefined,
        refusedWith: undefined,
      };
      this.#records.set(name, record);
    }
    if (record.address !== address) {
      if (record.address !== '') this.#retired.push(record.address);
      record.address = address;
      record.addressValid = validAddress(address);
      // A new address is a new agent: its predecessor's failures say nothing about it.
      record.failures = 0;
      record.agent = undefined;
    }
    record.source = inventory;
    const status = inventory.status ?? {};
    const applied = typeof status.appliedGeneration === 'number' ? status.appliedGeneration : undefined;
    if (applied !== record.inventoryApplied) {
      // The node's own newer word (e.g. after the recovery in the README) replaces what a 409 said.
      record.inventoryApplied = applied;
      record.refusedWith = undefined;
    }
    record.capacity = typeof status.capacity === 'number' && status.capacity >= 0 ? status.capacity : undefined;
    const publishedAt = status.publishedAt;
    if (publishedAt === record.publishedAt) return;
    const firstLook = record.publishedAt === undefined;
    record.publishedAt = publishedAt;
    if (publishedAt === undefined) {
      record.freshUntil = Number.NEGATIVE_INFINITY;
      return;
    }
    if (firstLook) {
      // The only time the agent's clock is compared with ours: on first sight we cannot know how old it is otherwise.
      const age = now - Date.parse(publishedAt);
      record.freshUntil = Number.isFinite(age)
        ? now - Math.max(0, age) + this.#options.staleAfterMs
        : Number.NEGATIVE_INFINITY;
    } else {
      record.freshUntil = now + this.#options.staleAfterMs;
    }
    const pools = status.pools ?? [];
    record.inventory = {
      pools,
      claimed: status.claimed ?? 0,
      draining: status.draining === true,
      atCapacity: status.atCapacity === true,
      at: now,
      source: 'inventory',
      reported: reportedSig(pools),
    };
  }
}

function validAddress(address: string): boolean {
  if (address === '') return false;
  try {
    const { host } = parseHostPort(address);
    return host !== '0.0.0.0' && host !== '::';
  } catch {
    return false;
  }
}

function highest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b);
}
