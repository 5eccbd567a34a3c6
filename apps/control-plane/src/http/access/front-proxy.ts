// Who is calling the Sandbox API: only the apiserver's front proxy may, and
// it says who the user is in request headers. The proxy is recognized by its
// client certificate, verified against the requestheader client CA, with a
// common name among the allowed names — all read from the ConfigMap
// kube-system/extension-apiserver-authentication, which kube-apiserver
// publishes from its --requestheader-* flags (re-read every minute, so a
// rotated CA is picked up). Any other caller, and a proxied request without a
// user, is refused.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { KubeTransport } from '@warmpool/kube';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import { z } from 'zod';
import type { UserInfo } from '@warmpool/kube';

export const AUTHENTICATION_CONFIGMAP = {
  namespace: 'kube-system',
  name: 'extension-apiserver-authentication',
} as const;

export interface RequestHeaderConfig {
  /** PEM bundle of the requestheader client CA. */
  clientCa: string;
  /** Common names the proxy's certificate may have; empty = any the CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

const stringList = z.string().transform((text, ctx) => {
  try {
    const value: unknown = JSON.parse(text);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'not a JSON array of strings' });
  return z.NEVER;
});

const configMapSchema = z.object({
  data: z.object({
    'requestheader-client-ca-file': z.string().min(1),
    'requestheader-allowed-names': stringList.optional(),
    'requestheader-username-headers': stringList.optional(),
    'requestheader-uid-headers': stringList.optional(),
    'requestheader-group-headers': stringList.optional(),
    'requestheader-extra-headers-prefix': stringList.optional(),
  }),
});

/**
 * The ConfigMap's requestheader settings; throws when it has none (the apiserver runs without an aggregation layer).
 */
export function requestHeaderConfigOf(configMap: unknown): RequestHeaderConfig {
  const parsed = configMapSchema.safeParse(configMap);
  if (!parsed.success) {
    throw new Error(
      `${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name} has no usable requestheader settings ` +
        `(is the apiserver's aggregation layer configured?): ` +
        parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  const data = parsed.data.data;
  return {
    clientCa: data['requestheader-client-ca-file'],
    allowedNames: data['requestheader-allowed-names'] ?? [],
    usernameHeaders: data['requestheader-username-headers'] ?? [],
    uidHeaders: data['requestheader-uid-headers'] ?? [],
    groupHeaders: data['requestheader-group-headers'] ?? [],
    extraHeaderPrefixes: data['requestheader-extra-headers-prefix'] ?? [],
  };
}

export type Authentication = { ok: true; user: UserInfo } | { ok: false; status: 401; message: string };

/** The user of a request that came through the front proxy, or why it is refused. */
export function authenticateProxied(req: IncomingMessage, config: RequestHeaderConfig): Authentication {
  const socket = req.socket as TLSSocket;
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) {
    return {
      ok: false,
      status: 401,
      message:
        "only the apiserver's front proxy may call this server (no client certificate signed by the requestheader client CA)",
    };
  }
  const commonName = socket.getPeerCertificate().subject?.CN;
  const cn = Array.isArray(commonName) ? commonName[0] : commonName;
  if (config.allowedNames.length > 0 && (cn === undefined || !config.allowedNames.includes(cn))) {
    return {
      ok: false,
      status: 401,
      message: `client certificate CN ${JSON.stringify(cn ?? '')} is not among the requestheader allowed names`,
    };
  }
  const username = firstHeader(req, config.usernameHeaders);
  if (username === undefined)
    return { ok: false, status: 401, message: 'anonymous requests are refused (the front proxy named no user)' };
  const uid = firstHeader(req, config.uidHeaders);
  const groups = config.groupHeaders
    .flatMap((header) => req.headersDistinct[header.toLowerCase()] ?? [])
    .filter((g) => g !== '');
  const extra: Record<string, string[]> = {};
  const prefixes = config.extraHeaderPrefixes.map((p) => p.toLowerCase());
  for (const [header, values] of Object.entries(req.headersDistinct)) {
    const prefix = prefixes.find((p) => header.startsWith(p));
    if (prefix === undefined || values === undefined) continue;
    const key = decodeURIComponentSafe(header.slice(prefix.length));
    (extra[key] ??= []).push(...values);
  }
  return {
    ok: true,
    user: {
      username,
      ...(uid !== undefined ? { uid } : {}),
      groups,
      ...(Object.keys(extra).length > 0 ? { extra } : {}),
    },
  };
}

function firstHeader(req: IncomingMessage, headers: readonly string[]): string | undefined {
  for (const header of headers) {
    const value = req.headersDistinct[header.toLowerCase()]?.[0];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export interface RequestHeaderSourceOptions {
  transport: KubeTransport;
  logger: Logger;
  /** How often the ConfigMap is read again (default 60 s; every 5 s until first read). */
  refreshMs?: number;
  onChange: (config: RequestHeaderConfig) => void;
}

/** Keeps the requestheader settings current. */
export class RequestHeaderSource {
  readonly #options: RequestHeaderSourceOptions;
  #current: RequestHeaderConfig | undefined;
  #timer: NodeJS.Timeout | undefined;
  #error: string | undefined;
  #closed = false;

  constructor(options: RequestHeaderSourceOptions) {
    this.#options = options;
  }

  get current(): RequestHeaderConfig | undefined {
    return this.#current;
  }

  /** Why there are no settings yet (or the last read failed). */
  get error(): string | undefined {
    return this.#error;
  }

  /** Reads once (resolving whether it worked), then keeps reading. */
  async start(): Promise<void> {
    await this.#refresh();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  async #refresh(): Promise<void> {
    const { transport, logger } = this.#options;
    try {
      const configMap = await transport.request<unknown>({
        method: 'GET',
        path: `/api/v1/namespaces/${AUTHENTICATION_CONFIGMAP.namespace}/configmaps/${AUTHENTICATION_CONFIGMAP.name}`,
      });
      const next = requestHeaderConfigOf(configMap);
      if (JSON.stringify(next) !== JSON.stringify(this.#current)) {
        this.#current = next;
        logger.info('front proxy settings loaded', {
          allowedNames: next.allowedNames,
          usernameHeaders: next.usernameHeaders,
          groupHeaders: next.groupHeaders,
        });
        this.#options.onChange(next);
      }
      this.#error = undefined;
    } catch (err) {
      const message = messageOf(err);
      if (message !== this.#error)
        logger.error('cannot read the front proxy settings; the Sandbox API refuses every request until it can', {
          err: message,
        });
      this.#error = message;
    }
    if (this.#closed) return;
    this.#timer = setTimeout(
      () => void this.#refresh(),
      this.#current === undefined ? 5_000 : (this.#options.refreshMs ?? 60_000),
    );
    this.#timer.unref();
  }
}
