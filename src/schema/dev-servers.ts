import { z } from 'zod';
import { requestDevServer } from '../upstream/endpoints.js';
import type { WireDevServer, WireDevServerRequest } from '../upstream/wire.js';
import { builder } from './builder.js';

const EXTERNAL_PORTS = [443, 8081];
// List lengths, read by useListLimits for variables and by the rules below for literals: each
// external port at most once, and more variables than any dev server needs.
const MAX_PORTS = EXTERNAL_PORTS.length;
const MAX_ENV_VARS = 1000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const nonBlank = (what: string) =>
  z
    .string()
    .refine((value) => value.trim() !== '', `must not be empty when ${what} is given`)
    .nullish();

/** Reports every repeat of a key at `[index].field`, so the client sees the exact offending path. */
const uniqueBy = <T>(field: string & keyof T, what: string, max: number) =>
  z
    .array(z.custom<T>())
    .max(max, `at most ${max} entries`)
    .nullish()
    .superRefine((list, ctx) => {
      const seen = new Set<unknown>();
      list?.forEach((item, index) => {
        const value = item[field];
        if (seen.has(value))
          ctx.addIssue({
            code: 'custom',
            path: [index, field],
            message: `${what} ${String(value)} is given twice`,
          });
        seen.add(value);
      });
    });

const EnvVarInput = builder.inputType('EnvVarInput', {
  description: 'An environment variable of the dev server.',
  extensions: { maxItems: MAX_ENV_VARS },
  fields: (t) => ({
    name: t.string({
      required: true,
      description: 'The variable name: letters, digits and underscores, not starting with a digit.',
      validate: z.string().regex(ENV_NAME, 'must match [A-Za-z_][A-Za-z0-9_]*'),
    }),
    value: t.string({ required: true, description: 'The value.' }),
  }),
});

const PortMappingInput = builder.inputType('PortMappingInput', {
  description: 'An external port of the dev server and the port inside it that it forwards to.',
  extensions: { maxItems: MAX_PORTS },
  fields: (t) => ({
    port: t.int({
      required: true,
      description: 'The externally exposed port: 443 or 8081.',
      validate: z.number().refine((port) => EXTERNAL_PORTS.includes(port), 'must be 443 or 8081'),
    }),
    targetPort: t.int({
      required: true,
      description: 'The port inside the dev server (1-65535).',
      validate: z
        .number()
        .int()
        .min(1, 'must be between 1 and 65535')
        .max(65535, 'must be between 1 and 65535'),
    }),
  }),
});

const RequestDevServerInput = builder.inputType('RequestDevServerInput', {
  description:
    'What to run in the dev server. An omitted field is not sent upstream; null is sent as null; `ports: []` exposes nothing, while omitted ports expose 3000 on 443.',
  fields: (t) => ({
    repoId: t.id({
      description: 'The repository to start from (non-empty when given).',
      validate: nonBlank('repoId'),
    }),
    gitRef: t.string({
      description: 'The git ref to check out (non-empty when given).',
      validate: nonBlank('gitRef'),
    }),
    devCommand: t.string({ description: 'The command that runs the dev server.' }),
    installCommand: t.string({ description: 'The command that installs dependencies.' }),
    preDevCommandOnce: t.string({
      description: 'A command run once before the first dev command.',
    }),
    envVars: t.field({
      type: [EnvVarInput],
      description: `Environment variables, at most ${MAX_ENV_VARS}; names are unique. Sent upstream as an object.`,
      validate: uniqueBy<{ name: string }>('name', 'the variable', MAX_ENV_VARS),
    }),
    computeClass: t.string({
      description:
        'The compute class, e.g. "high" (the upstream default) or "low"; non-empty when given.',
      validate: nonBlank('computeClass'),
    }),
    timeout: t.int({
      description: 'Seconds before the dev server stops (>= 0).',
      validate: z.number().int().min(0, 'must be >= 0').nullish(),
    }),
    ports: t.field({
      type: [PortMappingInput],
      description: `External port mappings, at most ${MAX_PORTS}; each external port at most once.`,
      validate: uniqueBy<{ port: number }>('port', 'external port', MAX_PORTS),
    }),
    baseId: t.string({
      description: 'Deprecated upstream.',
      deprecationReason: 'Deprecated by the upstream API; use repoId.',
    }),
    domain: t.string({
      description: 'Deprecated upstream.',
      deprecationReason: 'Deprecated by the upstream API.',
    }),
    repo: t.string({
      description: 'Deprecated upstream.',
      deprecationReason: 'Deprecated by the upstream API; use repoId.',
    }),
  }),
});

/** Keeps absent, null and empty apart: only the keys the client gave are sent. */
function toWireRequest(input: typeof RequestDevServerInput.$inferInput): WireDevServerRequest {
  const { envVars, repoId, ...rest } = input;
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) body[key] = value;
  if (repoId !== undefined) body.repoId = repoId === null ? null : String(repoId);
  if (envVars !== undefined)
    body.envVars =
      envVars === null ? null : Object.fromEntries(envVars.map((v) => [v.name, v.value]));
  return body as WireDevServerRequest;
}

const DevServerRef = builder.objectRef<WireDevServer>('DevServer').implement({
  shareable: true,
  description: 'An ephemeral development server.',
  fields: (t) => ({
    ephemeralUrl: t.exposeString('ephemeralUrl', {
      nullable: true,
      description: 'The address of the dev server.',
    }),
    mcpEphemeralUrl: t.exposeString('mcpEphemeralUrl', {
      nullable: true,
      description: 'The MCP address of the dev server.',
    }),
    url: t.exposeString('url', {
      description: 'The old address field.',
      deprecationReason: 'Use ephemeralUrl.',
    }),
    isNew: t.exposeBoolean('isNew', { description: 'Whether this request created the server.' }),
    devCommandRunning: t.exposeBoolean('devCommandRunning', {
      description: 'Whether the dev command is running.',
    }),
    installCommandRunning: t.exposeBoolean('installCommandRunning', {
      description: 'Whether the install command is running.',
    }),
  }),
});

builder.mutationFields((t) => ({
  requestDevServer: t.field({
    type: DevServerRef,
    description:
      'Requests a dev server for a repository. Checked before any upstream call; never retried automatically.',
    args: { input: t.arg({ type: RequestDevServerInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      ctx.client.send(requestDevServer, toWireRequest(input), ctx.call),
  }),
}));
