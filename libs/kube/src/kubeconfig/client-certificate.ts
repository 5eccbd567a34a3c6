// A client certificate and its key, read as they rotate. Two files renewed one
// after the other can be caught between the two writes: a pair whose key does
// not match its certificate is not used, the last pair that matched is.
import { createSecureContext } from 'node:tls';
import { KubeConfigError } from './kubeconfig.js';
import type { RefreshedFile } from './refreshed-file.js';

/** Bytes given inline, or a file read again as it rotates. */
export type Material = { readonly data: Buffer } | { readonly file: RefreshedFile };

export function bytesOf(material: Material): Buffer {
  return 'data' in material ? material.data : material.file.read();
}

export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
}

export class ClientCertificate {
  readonly #cert: Material;
  readonly #key: Material;
  #pair: CertificatePair | undefined;

  constructor(cert: Material, key: Material) {
    this.#cert = cert;
    this.#key = key;
  }

  /** The current pair; throws KubeConfigError while no pair read so far matched. */
  current(): CertificatePair {
    const cert = bytesOf(this.#cert);
    const key = bytesOf(this.#key);
    if (this.#pair?.cert === cert && this.#pair.key === key) return this.#pair;
    try {
      createSecureContext({ cert, key });
    } catch (error) {
      if (this.#pair) return this.#pair;
      throw new KubeConfigError(`the client certificate and key cannot be used together: ${(error as Error).message}`);
    }
    return (this.#pair = { cert, key });
  }
}
