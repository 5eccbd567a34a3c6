// Whether a request's Authorization header is the one a connection sent
// before, for the checks that remember a header per keep-alive connection
// (ConnectionTokenCheck here; the control plane's TokenReview keys). One
// definition, so every such check compares alike.
import { timingSafeEqual } from 'node:crypto';

/** A header as a connection sent it, kept for comparing the next ones with sameHeader. */
export interface RememberedHeader {
  readonly bytes: Buffer;
  /** Without lone surrogates: its UTF-8 bytes are its alone. */
  readonly wellFormed: boolean;
}

export function rememberHeader(header: string): RememberedHeader {
  return { bytes: Buffer.from(header, 'utf8'), wellFormed: header.isWellFormed() };
}

/**
 * Whether `presented` equals the remembered header, in time that depends on `presented`'s length only: its bytes are
 * compared in constant time (OpenSSL's CRYPTO_memcmp) with the remembered bytes, or, when the lengths differ, with
 * themselves. A connection shared by several callers (a proxy pooling its upstream connections) so learns nothing
 * about a header another caller sent from how long the compare took. UTF-8 gives two strings the same bytes only
 * when one has a lone surrogate (each encodes as U+FFFD); such a header never equals another here. Node's HTTP parser
 * hands headers over as Latin-1 text, which has none.
 */
export function sameHeader(presented: string, remembered: RememberedHeader): boolean {
  const bytes = Buffer.from(presented, 'utf8');
  const sameLength = bytes.length === remembered.bytes.length;
  return (
    timingSafeEqual(bytes, sameLength ? remembered.bytes : bytes) &&
    sameLength &&
    remembered.wellFormed &&
    presented.isWellFormed()
  );
}
