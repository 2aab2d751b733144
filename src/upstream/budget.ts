import { UpstreamBudgetError } from '../errors.js';

/**
 * The upstream calls one GraphQL request may still cause (MAX_UPSTREAM_CALLS). A logical call
 * takes one unit however often it is retried; a loader reserves the calls a page will need before
 * it makes the first, so a page that would be cut off midway costs nothing. A reservation is a
 * CallBudget of its own whose unused units go back to the request's when it is released.
 */
export class CallBudget {
  readonly #parent: CallBudget | undefined;
  #left: number;

  constructor(
    /** MAX_UPSTREAM_CALLS, named in the error. */
    readonly limit: number,
    left = limit,
    parent?: CallBudget,
  ) {
    this.#left = left;
    this.#parent = parent;
  }

  get left(): number {
    return this.#left;
  }

  /** `count` units set aside for one piece of work, or undefined (and nothing taken) if they do not fit. */
  reserve(count: number): CallBudget | undefined {
    if (count > this.#left) return undefined;
    this.#left -= count;
    return new CallBudget(this.limit, count, this);
  }

  /** A reservation asks its parent for `count` more; false (and nothing taken) if they do not fit. */
  extend(count: number): boolean {
    if (!this.#parent || count > this.#parent.#left) return false;
    this.#parent.#left -= count;
    this.#left += count;
    return true;
  }

  /** Spends one unit for a call about to be made; throws UpstreamBudgetError when none is left. */
  take(): void {
    if (this.#left < 1) throw new UpstreamBudgetError(this.limit);
    this.#left -= 1;
  }

  /** Gives a reservation's unused units back to its parent. */
  release(): void {
    if (!this.#parent) return;
    this.#parent.#left += this.#left;
    this.#left = 0;
  }
}
