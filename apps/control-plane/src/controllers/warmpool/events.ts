// Kubernetes Events on significant transitions (a pool became ready or
// degraded, a node left placement). core/v1 Events, written in the background:
// an event is a courtesy to humans and must never slow or fail a reconcile.
import { randomBytes } from 'node:crypto';
import { apiVersionOf, type KubeObject, type ObjectMeta, type ResourceType } from '@warmpool/api';
import { ResourceClient, type KubeConfig } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import { kubeTime } from '../kube-time.js';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  record(object: KubeObject, objectType: ResourceType, type: EventType, reason: string, message: string): void;
  /** Waits for the events in flight. */
  close(): Promise<void>;
}

const EventType: ResourceType = { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true };

interface CoreEvent extends KubeObject {
  metadata: ObjectMeta;
  involvedObject: {
    apiVersion: string;
    kind: string;
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: EventType;
  source: { component: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

export interface KubeEventRecorderOptions {
  kubeConfig: KubeConfig;
  component: string;
  /** This replica's identity. */
  instance: string;
  logger: Logger;
  clock: Clock;
  /** Events beyond this many in flight are dropped (and logged at debug). */
  maxInFlight?: number;
  onRecorded?(reason: string): void;
}

export class KubeEventRecorder implements EventRecorder {
  readonly #events: ResourceClient<CoreEvent>;
  readonly #options: KubeEventRecorderOptions;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: KubeEventRecorderOptions) {
    this.#options = options;
    this.#events = new ResourceClient<CoreEvent>(options.kubeConfig, EventType);
  }

  record(object: KubeObject, objectType: ResourceType, type: EventType, reason: string, message: string): void {
    const { logger, clock, component, instance } = this.#options;
    const name = object.metadata?.name;
    if (name === undefined) return;
    if (this.#inFlight.size >= (this.#options.maxInFlight ?? 64)) {
      logger.debug('event dropped: too many in flight', { reason, object: name });
      return;
    }
    // Cluster-scoped objects (NodeInventory) get their events in `default`, as kubectl expects.
    const namespace = objectType.namespaced ? (object.metadata?.namespace ?? 'default') : 'default';
    const now = kubeTime(clock.now());
    const event: CoreEvent = {
      metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: {
        apiVersion: apiVersionOf(objectType),
        kind: objectType.kind,
        name,
        ...(objectType.namespaced && object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
        ...(object.metadata?.uid ? { uid: object.metadata.uid } : {}),
      },
      reason,
      message: message.slice(0, 1024),
      type,
      source: { component },
      reportingComponent: component,
      reportingInstance: instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    const write = this.#events
      .create(event, { signal: AbortSignal.timeout(10_000) })
      .then(() => this.#options.onRecorded?.(reason))
      .catch((err: unknown) => logger.debug('event not recorded', { reason, object: name, err }))
      .finally(() => this.#inFlight.delete(write));
    this.#inFlight.add(write);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#inFlight]);
  }
}

/** Drops every event: for tests and runs without Kubernetes Events. */
export const discardEvents: EventRecorder = {
  record: () => undefined,
  close: () => Promise.resolve(),
};
