// From a Sandbox's (namespace, name) to where and how the router reaches it,
// through the Kubernetes API only:
// - the Secret the SandboxClaim controller writes for a served claim (named
//   after the claim, of type warmpool.dev/sandbox, controlled by that claim):
//   the sandbox's id and token — the token exists nowhere else in the API;
// - the Sandbox the control plane serves (agents.x-k8s.io, aggregated), which
//   is built from the nodes' own records: it must name the same sandbox id,
//   and its ownerAddr and deadline are the ones used. A Secret alone (forged,
//   or left behind) never routes anywhere;
// - on a miss, the SandboxClaim, to tell an expired sandbox (Ready=False
//   Expired) from one that never was.
// Routes are kept for a short while (positive answers only), so a burst of
// calls to one sandbox reads the API once; the node stays the judge of every
// forwarded call (a released sandbox answers 404 there).
import { SandboxClaimType, SandboxType, claimSecretSchema, type Sandbox, type SandboxClaim } from '@warmpool/api';
import { ignoreNotFound, type KubeTransport } from '@warmpool/kube';

export interface SandboxRoute {
  /** sandboxd's id. */
  id: string;
  /** The node's ownerAddr (host:port) the sandbox is reached at. */
  ownerAddr: string;
  /** The sandbox's own token: sent to its node, never to the caller. */
  token: string;
  /** Epoch ms when the node reaps it. */
  deadline: number;
}

export type Resolution =
  { kind: 'route'; route: SandboxRoute } | { kind: 'not-found'; why: string } | { kind: 'expired'; why: string };

export interface ResolverOptions {
  transport: KubeTransport;
  /** How long a found route is reused (0 = never). */
  cacheTtlMs: number;
  maxEntries?: number;
  now?: () => number;
}

interface Cached {
  route: SandboxRoute;
  until: number;
}

export class SandboxResolver {
  readonly #transport: KubeTransport;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #routes = new Map<string, Cached>();
  readonly #inFlight = new Map<string, Promise<Resolution>>();

  constructor(options: ResolverOptions) {
    this.#transport = options.transport;
    this.#ttlMs = options.cacheTtlMs;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  resolve(namespace: string, name: string): Promise<Resolution> {
    const key = `${namespace}/${name}`;
    const hit = this.#routes.get(key);
    const now = this.#now();
    if (hit !== undefined && hit.until > now && hit.route.deadline > now)
      return Promise.resolve({ kind: 'route', route: hit.route });
    const pending = this.#inFlight.get(key);
    if (pending !== undefined) return pending;
    const asking = this.#lookUp(namespace, name)
      .then((resolution) => {
        this.#routes.delete(key);
        if (resolution.kind === 'route' && this.#ttlMs > 0) {
          this.#routes.set(key, { route: resolution.route, until: this.#now() + this.#ttlMs });
          if (this.#routes.size > this.#maxEntries) {
            const oldest = this.#routes.keys().next();
            if (oldest.done !== true) this.#routes.delete(oldest.value);
          }
        }
        return resolution;
      })
      .finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, asking);
    return asking;
  }

  /** Forget a route (its node said the sandbox is gone). */
  forget(namespace: string, name: string): void {
    this.#routes.delete(`${namespace}/${name}`);
  }

  async #lookUp(namespace: string, name: string): Promise<Resolution> {
    const [secret, sandbox] = await Promise.all([this.#secret(namespace, name), this.#sandbox(namespace, name)]);
    const now = this.#now();
    if (secret !== undefined && sandbox?.status?.sandboxID === secret.id) {
      const deadline = Date.parse(sandbox.status.deadline ?? secret.deadline);
      const ownerAddr = sandbox.status.ownerAddr ?? secret.ownerAddr;
      if (deadline <= now) return { kind: 'expired', why: `sandbox "${name}" passed its deadline` };
      return { kind: 'route', route: { id: secret.id, ownerAddr, token: secret.token, deadline } };
    }
    if (secret !== undefined && Date.parse(secret.deadline) <= now)
      return { kind: 'expired', why: `sandbox "${name}" passed its deadline` };
    const claim = await this.#claim(namespace, name);
    const ready = claim?.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'False' && ready.reason === 'Expired')
      return { kind: 'expired', why: `SandboxClaim "${name}" expired: ${ready.message ?? 'its sandbox is gone'}` };
    if (sandbox !== undefined && secret === undefined)
      return {
        kind: 'not-found',
        why: `sandbox "${name}" was not claimed by a SandboxClaim: the router cannot reach it`,
      };
    return { kind: 'not-found', why: `no claimed sandbox "${name}" in namespace "${namespace}"` };
  }

  async #secret(
    namespace: string,
    name: string,
  ): Promise<{ id: string; token: string; ownerAddr: string; deadline: string } | undefined> {
    const raw = await ignoreNotFound(
      this.#transport.request<unknown>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` }),
    );
    const parsed = claimSecretSchema.safeParse(raw);
    if (!parsed.success) return undefined;
    const controller = parsed.data.metadata.ownerReferences?.find((ref) => ref.controller === true);
    if (controller?.kind !== SandboxClaimType.kind || controller.name !== name) return undefined;
    const decode = (value: string): string => Buffer.from(value, 'base64').toString('utf8');
    const { data } = parsed.data;
    return {
      id: decode(data.id),
      token: decode(data.token),
      ownerAddr: decode(data.ownerAddr),
      deadline: decode(data.deadline),
    };
  }

  #sandbox(namespace: string, name: string): Promise<Sandbox | undefined> {
    const { group, version, plural } = SandboxType;
    return ignoreNotFound(
      this.#transport.request<Sandbox>({
        method: 'GET',
        path: `/apis/${group}/${version}/namespaces/${namespace}/${plural}/${name}`,
      }),
    );
  }

  #claim(namespace: string, name: string): Promise<SandboxClaim | undefined> {
    const { group, version, plural } = SandboxClaimType;
    return ignoreNotFound(
      this.#transport.request<SandboxClaim>({
        method: 'GET',
        path: `/apis/${group}/${version}/namespaces/${namespace}/${plural}/${name}`,
      }),
    );
  }
}
