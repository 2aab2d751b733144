import { availableParallelism } from 'node:os';
import { parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { credentialSettingsProblem } from '../credentials.js';
import { variablesOf } from './variable.js';
import { type Settings, settingsSchema } from './variables.js';

/** A bad setting: main.ts prints its message, which names the variable, as one stderr line. */
export class ConfigError extends Error {}

const VARIABLES = variablesOf(settingsSchema.shape);

/** Every variable the facade reads (the deploy manifests are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = VARIABLES.map((variable) => variable.name);

/** The settings, with what follows from them. */
export type Config = ReturnType<typeof derive>;

/** Span export (OTEL_*); undefined when nothing is exported. */
export type TracingConfig = NonNullable<Config['tracing']>;

function derive(settings: Settings) {
  const { nodeEnv, otel, ...values } = settings;
  const production = nodeEnv === 'production';
  return {
    ...values,
    production,
    graphiql: values.graphiql ?? !production,
    workers:
      values.workers === 'auto' || (values.workers === undefined && production)
        ? availableParallelism()
        : (values.workers ?? 1),
    limits: {
      ...values.limits,
      // `_service { sdl }` discloses the same schema as introspection.
      subgraphSdl: values.limits.subgraphSdl ?? values.limits.introspection,
    },
    rateLimit: {
      ...values.rateLimit,
      addressPoints: values.rateLimit.addressPoints ?? values.rateLimit.points,
    },
    tracing: tracingConfig(otel),
    propagators: otel.propagators ?? (['tracecontext', 'baggage'] as const),
    apq: {
      ...values.apq,
      // APQ would run documents the manifest does not hold.
      enabled: !values.persistedDocuments.only,
      redisUrl: values.rateLimit.redisUrl,
    },
  };
}

/**
 * The exporter reads the endpoint, headers, timeout and compression itself. No endpoint, no export:
 * the specification's default would export to whatever listens on localhost:4318.
 */
function tracingConfig(otel: Settings['otel']) {
  if (otel.sdkDisabled || otel.exporter === 'none') return undefined;
  if (!otel.tracesEndpoint && !otel.endpoint) return undefined;
  return {
    protocol: otel.tracesProtocol ?? otel.protocol,
    /** Only to blank them out of a start-up error. */
    headers: {
      ...parseKeyPairsIntoRecord(otel.headers),
      ...parseKeyPairsIntoRecord(otel.tracesHeaders),
    },
  };
}

/** The only reader of the environment; an empty string counts as unset. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const parsed = settingsSchema.safeParse(readEnvironment(source));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = VARIABLES.find((v) => v.path.every((key, i) => issue?.path[i] === key));
    const name = variable?.name ?? 'configuration';
    const shown = variable?.secret ? '' : ` (got ${JSON.stringify(source[name])})`;
    throw new ConfigError(`${name}: ${issue?.message ?? 'invalid'}${shown}`);
  }
  const config = derive(parsed.data);
  if (config.metricsPort && config.metricsPort === config.port) {
    throw new ConfigError(`METRICS_PORT: must differ from PORT (both ${config.port})`);
  }
  if (config.persistedDocuments.only && !config.persistedDocuments.documents) {
    throw new ConfigError(
      'PERSISTED_DOCUMENTS_ONLY: true needs a manifest of trusted documents; set PERSISTED_DOCUMENTS to its path',
    );
  }
  const credentialsProblem = credentialSettingsProblem(config);
  if (credentialsProblem) throw new ConfigError(credentialsProblem);
  return config;
}

/** Each set variable's string at its place in the settings' shape. */
function readEnvironment(source: NodeJS.ProcessEnv): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const { name, path } of VARIABLES) {
    let node = input;
    for (const key of path.slice(0, -1)) {
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
    }
    const value = source[name];
    if (value !== undefined && value !== '') node[path[path.length - 1] as string] = value;
  }
  return input;
}

/** Defaults for tests and tools: the same schema, no environment. */
export function defaultConfig(): Config {
  return loadConfig({});
}
