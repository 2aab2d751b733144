import {
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  isBrokenCircuitError,
} from 'cockatiel';
import { UpstreamError } from '../errors.js';

/** Failures that say the upstream itself is unwell; a 4xx or a cancelled call says nothing of it. */
export function isUpstreamFault(error: Error): boolean {
  if (!(error instanceof UpstreamError) || error.cancelled) return false;
  if (error.transportFault) return true;
  if (error.code === 'UPSTREAM_UNAVAILABLE' || error.code === 'UPSTREAM_TIMEOUT') return true;
  return (error.upstream.status ?? 0) >= 500;
}

/** Thrown without calling the upstream while the circuit is open; never retried. */
export class CircuitOpenError extends UpstreamError {
  constructor(cooldownMs: number) {
    super('UPSTREAM_UNAVAILABLE', {
      message: `The upstream keeps failing; calls are paused for up to ${Math.ceil(cooldownMs / 1000)} s`,
    });
  }
}

/** As the metrics name them. */
export type BreakerState = 'closed' | 'open' | 'half_open';

export interface Breaker {
  run<T>(attempt: () => Promise<T>): Promise<T>;
}

/**
 * One circuit (docs/upstream.md#timeouts-retries-and-the-breaker). `attempt` must throw coded
 * UpstreamErrors: anything else passes through the circuit unseen.
 */
export function createBreaker(
  threshold: number,
  cooldownMs: number,
  onChange?: (state: BreakerState) => void,
): Breaker {
  if (threshold <= 0) return { run: (attempt) => attempt() };
  const policy = circuitBreaker(
    // A half-open trial whose client went away proved nothing: it must not close the circuit
    // (cockatiel closes on an error it does not handle).
    handleWhen(
      (error) =>
        isUpstreamFault(error) ||
        (error instanceof UpstreamError &&
          error.cancelled &&
          policy.state === CircuitState.HalfOpen),
    ),
    { halfOpenAfter: cooldownMs, breaker: new ConsecutiveBreaker(threshold) },
  );
  if (onChange) {
    policy.onBreak(() => onChange('open'));
    policy.onHalfOpen(() => onChange('half_open'));
    policy.onReset(() => onChange('closed'));
  }
  return {
    run: (attempt) =>
      policy.execute(attempt).catch((error: unknown) => {
        throw isBrokenCircuitError(error) ? new CircuitOpenError(cooldownMs) : error;
      }),
  };
}

export interface RouteBreakers {
  run<T>(route: string, attempt: () => Promise<T>): Promise<T>;
}

/** One circuit per route: a route that keeps failing says nothing of the others. */
export function createRouteBreakers(
  threshold: number,
  cooldownMs: number,
  onChange?: (state: BreakerState, route: string) => void,
): RouteBreakers {
  const circuits = new Map<string, Breaker>();
  return {
    run(route, attempt) {
      let circuit = circuits.get(route);
      if (!circuit) {
        circuit = createBreaker(threshold, cooldownMs, onChange && ((s) => onChange(s, route)));
        circuits.set(route, circuit);
      }
      return circuit.run(attempt);
    },
  };
}
