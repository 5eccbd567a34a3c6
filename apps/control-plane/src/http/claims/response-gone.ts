// The claim API's hot path hears its caller give up from Node's own
// response: no AbortController, no listener until the claim path asks for one.
import type { ServerResponse } from 'node:http';
import type { CallerGone } from '../../provisioning/caller-signal.js';

/**
 * The caller gave up when its response closed before it was all written (node-server's rule for its request signal),
 * whenever that was: a caller gone while it was reviewed or its body read reads as gone once the claim path asks.
 */
export class ResponseGone implements CallerGone {
  readonly #outgoing: ServerResponse;

  constructor(outgoing: ServerResponse) {
    this.#outgoing = outgoing;
  }

  get gone(): boolean {
    return this.#outgoing.closed && !this.#outgoing.writableFinished;
  }

  onGone(listener: () => void): () => void {
    const outgoing = this.#outgoing;
    const onClose = (): void => {
      if (!outgoing.writableFinished) listener();
    };
    outgoing.once('close', onClose);
    return () => outgoing.off('close', onClose);
  }
}
