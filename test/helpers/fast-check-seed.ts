// vitest's globalSetup: one fast-check seed for the whole run, printed once, so that every run
// generates the same values and a failure replays anywhere. FC_SEED chooses another seed.
import type { TestProject } from 'vitest/node';

const DEFAULT_SEED = 42;

declare module 'vitest' {
  export interface ProvidedContext {
    /** The seed every property of the run starts from (`fc.configureGlobal`). */
    fcSeed: number;
  }
}

/** FC_SEED as fast-check prints a seed after a failure: an integer, possibly negative. */
function readSeed(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_SEED;
  const seed = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(seed)) {
    throw new Error(`FC_SEED must be an integer, as fast-check prints a seed; got ${value}`);
  }
  return seed;
}

export function setup(project: TestProject): void {
  const seed = readSeed(process.env.FC_SEED);
  project.provide('fcSeed', seed);
  console.log(
    process.env.FC_SEED
      ? `fast-check seed ${seed} (from FC_SEED)`
      : `fast-check seed ${seed} (FC_SEED=<n> to replay another)`,
  );
}
