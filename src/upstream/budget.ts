import { UpstreamBudgetError } from '../errors.js';

/**
 * What one request may still call (MAX_UPSTREAM_CALLS, docs/operations.md#limits). A reservation
 * is a CallBudget of its own whose unused units go back to its parent when released.
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

  /** Undefined, and nothing taken, if `count` units do not fit. */
  reserve(count: number): CallBudget | undefined {
    if (count > this.#left) return undefined;
    this.#left -= count;
    return new CallBudget(this.limit, count, this);
  }

  /** A reservation asks its parent for `count` more; false, and nothing taken, if they do not fit. */
  extend(count: number): boolean {
    if (!this.#parent || count > this.#parent.#left) return false;
    this.#parent.#left -= count;
    this.#left += count;
    return true;
  }

  /** Throws UpstreamBudgetError when no unit is left. */
  take(): void {
    if (this.#left < 1) throw new UpstreamBudgetError(this.limit);
    this.#left -= 1;
  }

  release(): void {
    if (!this.#parent) return;
    this.#parent.#left += this.#left;
    this.#left = 0;
  }
}
