/** Thrown by `add()` once the batcher is closed: the item was NOT taken. */
export class BatcherClosedError extends Error {
  constructor() {
    super('batcher is closed: the item was not added');
    this.name = 'BatcherClosedError';
  }
}
