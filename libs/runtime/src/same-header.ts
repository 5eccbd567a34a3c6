// Whether a request's Authorization header is the one a connection sent
// before, for the checks that remember a header per keep-alive connection
// (ConnectionTokenCheck here; the control plane's TokenReview keys). One
// definition, so every such check compares alike.
import { timingSafeEqual } from 'node:crypto';

const encoder = new TextEncoder();

/** A header as a connection sent it, kept for as long as the connection lives to compare the next ones with. */
export class RememberedHeader {
  // Its own memory (TextEncoder's): a slice of Node's shared Buffer pool would keep a whole 64 KiB block alive, with
  // other callers' headers in it, for as long as the connection lives.
  readonly #bytes: Uint8Array;
  /** Without lone surrogates: its UTF-8 bytes are its alone. */
  readonly #wellFormed: boolean;

  constructor(header: string) {
    this.#bytes = encoder.encode(header);
    this.#wellFormed = header.isWellFormed();
  }

  /**
   * Whether `presented` is this header, in time that depends on `presented`'s length only: its bytes are compared in
   * constant time (OpenSSL's CRYPTO_memcmp) with the remembered bytes, or, when the lengths differ, with themselves.
   * A connection shared by several callers (a proxy pooling its upstream connections) so learns nothing about a
   * header another caller sent from how long the compare took. UTF-8 gives two strings the same bytes only when one
   * has a lone surrogate (each encodes as U+FFFD); such a header equals none here. Node's HTTP parser hands headers
   * over as Latin-1 text, which has none.
   */
  matches(presented: string): boolean {
    const bytes = Buffer.from(presented, 'utf8');
    const sameLength = bytes.length === this.#bytes.length;
    return (
      timingSafeEqual(bytes, sameLength ? this.#bytes : bytes) &&
      sameLength &&
      this.#wellFormed &&
      presented.isWellFormed()
    );
  }

  /** Bytes held for it: its own, never a shared pool's block. */
  get heldBytes(): number {
    return this.#bytes.buffer.byteLength;
  }
}
