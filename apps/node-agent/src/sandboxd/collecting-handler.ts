import { errors, type Dispatcher } from 'undici';
import { contentTypeOf, type SandboxdAnswer, type SandboxdReceiver } from './answer.js';
import type { Deadline, DeadlineList, Expiring } from './deadlines.js';
import { DeadlineError, toUnavailable } from './errors.js';

/**
 * Gathers one whole answer, within one deadline from its creation. undici
 * calls onRequestStart just before it writes the request on a connection, so
 * that call is what tells a failure before sending (retry is safe) from one
 * after (the call may have taken effect). A call whose deadline passes while
 * it still waits for a connection fails at once, and is aborted, unsent, when
 * a connection comes.
 */
export class CollectingHandler implements Dispatcher.DispatchHandler, Expiring {
  readonly #operation: string;
  readonly #deadlines: DeadlineList;
  readonly #receiver: SandboxdReceiver;
  readonly #deadline: Deadline;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #status = 0;
  #contentType: string | undefined;
  #retryAfter: string | undefined;
  // A small answer comes in one chunk: the list is made only for a second.
  #first: Buffer | undefined;
  #more: Buffer[] | undefined;

  /** The call's deadline is `deadlines`' duration from now. */
  constructor(operation: string, deadlines: DeadlineList, receiver: SandboxdReceiver) {
    this.#operation = operation;
    this.#deadlines = deadlines;
    this.#receiver = receiver;
    this.#deadline = deadlines.add(this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#settled) {
      controller.abort(new DeadlineError('the deadline passed while waiting for a connection'));
      return;
    }
    this.#controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Dispatcher.ResponseData['headers'],
  ): void {
    this.#status = statusCode;
    this.#contentType = contentTypeOf(headers);
    const retryAfter = headers['retry-after'];
    if (retryAfter !== undefined) this.#retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#first === undefined) this.#first = chunk;
    else (this.#more ??= [this.#first]).push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    this.#settle();
    const body = this.#more !== undefined ? Buffer.concat(this.#more) : (this.#first ?? Buffer.alloc(0));
    const answer: SandboxdAnswer = { status: this.#status, body, contentType: this.#contentType };
    if (this.#retryAfter !== undefined) answer.retryAfter = this.#retryAfter;
    this.#receiver.answer(answer);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#settled) return;
    this.#settle();
    const sent = this.#controller !== undefined;
    this.#receiver.failed(
      err instanceof errors.InvalidArgumentError ? err : toUnavailable(this.#operation, err, this.#deadlines.ms, sent),
    );
  }

  deadlinePassed(): void {
    if (this.#settled) return;
    const controller = this.#controller;
    // Sent: aborting ends the request through onResponseError, classified as sent.
    if (controller !== undefined) {
      controller.abort(new DeadlineError('deadline passed'));
      return;
    }
    this.#settle();
    this.#receiver.failed(
      toUnavailable(this.#operation, new DeadlineError('deadline passed'), this.#deadlines.ms, false),
    );
  }

  #settle(): void {
    this.#settled = true;
    this.#deadlines.remove(this.#deadline);
  }
}
