import { z } from 'zod';

// The REST wire shapes of upstream-api.md, checked where answers enter the facade. Fields the
// spec does not show are tolerated and stripped; fields it requires are checked.

export const wireBranch = z.object({
  default: z.boolean(),
  name: z.string().optional(),
  target: z.string(),
});

export const wireTag = z.object({
  name: z.string().optional(),
  target: z.string(),
  message: z.string().nullish(),
});

export const wireRepository = z.object({
  // Not in the spec; passed through when present.
  id: z.union([z.string(), z.number()]).nullish(),
  defaultBranch: z.string().nullish(),
  branches: z.record(z.string(), wireBranch).nullish(),
  tags: z.record(z.string(), wireTag).nullish(),
});

export const wireRepositoryList = z.object({
  repositories: z.array(wireRepository),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
});

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

export type WireRepository = z.output<typeof wireRepository>;
export type WireRepositoryList = z.output<typeof wireRepositoryList>;
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
