import { z } from 'zod';

// The REST wire shapes (docs/upstream.md#routes): required fields are checked, unknown ones
// stripped. The repository list has its own decoder (repository-list.ts).

/** With the path of the first field that breaks the spec. */
export class WireMismatch extends Error {
  constructor(
    readonly path: ReadonlyArray<string | number>,
    message: string,
  ) {
    super(message);
  }
}

/** Returns the answer in the facade's shape, or throws WireMismatch. */
export type Decoder<T> = (json: unknown) => T;

export function zodDecoder<T>(schema: z.ZodType<T>): Decoder<T> {
  return (json) => {
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw new WireMismatch(
      (issue?.path ?? []).map((key) => (typeof key === 'symbol' ? String(key) : key)),
      issue?.message ?? 'invalid',
    );
  };
}

export const wireDomainVerification = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  domain: z.string(),
  accountId: z.union([z.string(), z.number()]).transform(String),
  verificationCode: z.string(),
  createdAt: z.string(),
});

export const wireDevServer = z.object({
  url: z.string(),
  isNew: z.boolean(),
  devCommandRunning: z.boolean(),
  installCommandRunning: z.boolean(),
  mcpEphemeralUrl: z.string().nullish(),
  ephemeralUrl: z.string().nullish(),
});

/** The error bodies: `{message}` in general, `{response}` for dev servers. */
export const wireError = z.object({
  message: z.string().optional(),
  response: z.string().optional(),
});

export type WireDomainVerification = z.output<typeof wireDomainVerification>;
export type WireDevServer = z.output<typeof wireDevServer>;

/** The request body of POST /ephemeral/v1/dev-servers; absent keys are not sent. */
export interface WireDevServerRequest {
  devCommand?: string | null;
  installCommand?: string | null;
  preDevCommandOnce?: string | null;
  baseId?: string | null;
  envVars?: Record<string, string> | null;
  repoId?: string | null;
  computeClass?: string | null;
  timeout?: number | null;
  domain?: string | null;
  repo?: string | null;
  gitRef?: string | null;
  ports?: Array<{ port: number; targetPort: number }> | null;
}
