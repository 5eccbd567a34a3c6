// Where this node's sandboxes are reached: sandboxd's `owner_addr`. The agent
// learns it from the claim answers it passes on and from sandboxd's info (when
// sandboxd says), and the inventory publishes it, so a control-plane replica
// that never saw one of the node's claims still knows it. A value published
// before a restart is taken back only while nothing fresher is known: a
// sandboxd that names no address in its info must not have a restarted agent
// erase the one its last claim answer gave.
import { normalizeOwnerAddr, tolerantClaimResponseSchema, type NodeInfo } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { SandboxdAnswer } from './sandboxd/client.js';

const decoder = new TextDecoder();

/** The key as Go's encoding/json writes it (sandboxd's encoder never escapes it). */
const OWNER_KEY = Buffer.from('"owner_addr"');

/**
 * Whether `body` holds `pattern` (`"owner_addr":<the value's JSON>`) and the key `"owner_addr"` exactly once. In valid
 * JSON a `"owner_addr":` not preceded by a backslash is a key, never the inside of a string, so such an answer can
 * only name that same value (top level, or nested with no top-level owner at all).
 */
function namesOnly(body: Uint8Array, pattern: Buffer): boolean {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const at = bytes.indexOf(pattern);
  return at >= 0 && bytes.indexOf(OWNER_KEY) === at && bytes.indexOf(OWNER_KEY, at + 1) === -1;
}

export class OwnerAddress {
  readonly #logger: Logger;
  readonly #listeners: Array<(ownerAddr: string) => void> = [];
  #value: string | undefined;
  /** Seen from sandboxd itself in this run (not merely read back): a read-back value never replaces it. */
  #fresh = false;
  /** The last unusable value logged, so an odd sandboxd logs once, not once per claim. */
  #refused: string | undefined;
  /**
   * The owner the last parsed claim answer named, as `"owner_addr":<JSON>` bytes, and the value the address had
   * right after: an answer naming only the same owner while the address is still that value would change nothing,
   * so it is not parsed (every claim answer passes here).
   */
  #lastNamed: { pattern: Buffer; value: string | undefined } | undefined;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** The address, once known. */
  get value(): string | undefined {
    return this.#value;
  }

  /** Called with every new value (learned or read back). */
  onChange(listener: (ownerAddr: string) => void): void {
    this.#listeners.push(listener);
  }

  /** A claim answer the agent passed on: a 200's `owner_addr`. Runs after the reply is written; never throws. */
  learnFromClaimAnswer(answer: SandboxdAnswer): void {
    if (answer.status !== 200) return;
    const last = this.#lastNamed;
    if (last !== undefined && last.value === this.#value && namesOnly(answer.body, last.pattern)) return;
    let body: unknown;
    try {
      body = JSON.parse(decoder.decode(answer.body));
    } catch {
      return;
    }
    // Tolerant: a claim answer with more fields, or none for the owner, still parses (a redirect has no id: ignored).
    const parsed = tolerantClaimResponseSchema.safeParse(body);
    if (parsed.success && parsed.data.owner_addr !== undefined) {
      this.#learn(parsed.data.owner_addr);
      const pattern = Buffer.from(`"owner_addr":${JSON.stringify(parsed.data.owner_addr)}`);
      this.#lastNamed = { pattern, value: this.#value };
    }
  }

  learnFromInfo(info: NodeInfo): void {
    if (info.owner_addr !== undefined) this.#learn(info.owner_addr);
  }

  /** What the node's inventory said before this agent started; ignored once sandboxd has told this run. */
  recover(published: string | undefined): void {
    if (this.#fresh || published === undefined) return;
    const normalized = normalizeOwnerAddr(published);
    if (normalized !== undefined) this.#set(normalized);
  }

  #learn(raw: string): void {
    // A full http(s) origin (sandboxd's client_advertise) is published as its host:port, never raw.
    const normalized = normalizeOwnerAddr(raw);
    if (normalized === undefined) {
      if (this.#refused !== raw)
        this.#logger.warn("sandboxd's owner_addr is neither host:port nor an http(s) origin; it is not published", {
          ownerAddr: raw,
        });
      this.#refused = raw;
      return;
    }
    this.#fresh = true;
    this.#set(normalized);
  }

  #set(value: string): void {
    if (value === this.#value) return;
    this.#value = value;
    for (const listener of this.#listeners) listener(value);
  }
}
