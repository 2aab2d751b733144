import { ConsecutiveBreaker, circuitBreaker, handleWhen, isBrokenCircuitError } from 'cockatiel';
import { UpstreamError } from '../errors.js';

/** Failures that say the upstream itself is unwell; a 4xx or a cancelled call says nothing of it. */
function isUpstreamFault(error: Error): boolean {
  if (!(error instanceof UpstreamError) || error.cancelled) return false;
  const status = error.upstream.status;
  if (status !== undefined) return status >= 500;
  return error.code === 'UPSTREAM_UNAVAILABLE' || error.code === 'UPSTREAM_TIMEOUT';
}

/** Thrown without calling the upstream while the circuit is open; never retried. */
export class CircuitOpenError extends UpstreamError {
  constructor(cooldownMs: number) {
    super('UPSTREAM_UNAVAILABLE', {
      message: `The upstream keeps failing; calls are paused for up to ${Math.ceil(cooldownMs / 1000)} s`,
    });
  }
}

export interface Breaker {
  run<T>(attempt: () => Promise<T>): Promise<T>;
}

/**
 * One circuit per upstream (cockatiel): after `threshold` consecutive faults, calls fail fast for
 * `cooldownMs` instead of piling up; then one trial call decides whether it closes again.
 */
export function createBreaker(threshold: number, cooldownMs: number): Breaker {
  if (threshold <= 0) return { run: (attempt) => attempt() };
  const policy = circuitBreaker(handleWhen(isUpstreamFault), {
    halfOpenAfter: cooldownMs,
    breaker: new ConsecutiveBreaker(threshold),
  });
  return {
    run: (attempt) =>
      policy.execute(attempt).catch((error: unknown) => {
        throw isBrokenCircuitError(error) ? new CircuitOpenError(cooldownMs) : error;
      }),
  };
}
