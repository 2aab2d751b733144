import { createRequire } from 'node:module';
import type { Tracer } from '@opentelemetry/api';
import type { TracingConfig } from '../config/load.js';
import type { Logger } from './logger.js';
import { createPropagator, type PropagatorName } from './trace-context.js';

/** The running OpenTelemetry SDK. */
export interface Tracing {
  tracer: Tracer;
  /** Names the active server span after its route (`POST /graphql`), not its method alone. */
  setHttpRoute(route: string): void;
  /** Exports what is still buffered. */
  shutdown(): Promise<void>;
}

const TRACER_NAME = 'graphql-rest-facade';

/**
 * Loads and starts the SDK, which reads the rest of its `OTEL_*` variables itself
 * (docs/observability.md#opentelemetry-spans). Must run before node:http serves a request.
 */
export async function startTracing(
  config: TracingConfig,
  propagators: readonly PropagatorName[],
  probePaths: readonly string[],
  logger: Logger,
): Promise<Tracing> {
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { getRPCMetadata, RPCType },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
    { registerInstrumentations },
    { HttpInstrumentation },
    exporters,
    api,
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    config.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/api'),
  ]);

  // The SDK's diagnostics (a bad variable, a failed export) go into the log.
  const fields = { component: 'opentelemetry' };
  api.diag.setLogger(
    {
      error: (message) => logger.error(fields, message),
      warn: (message) => logger.warn(fields, message),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    api.DiagLogLevel.WARN,
  );
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes({ 'service.name': TRACER_NAME }))
      .merge(detectResources({ detectors: [envDetector] })),
    spanProcessors: [new BatchSpanProcessor(new exporters.OTLPTraceExporter())],
  });
  provider.register({ propagator: createPropagator(propagators) });

  const probes = new Set(probePaths);
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes would be most of the spans and say nothing.
        ignoreIncomingRequestHook: (request) =>
          probes.has((request.url ?? '/').split('?', 1)[0] ?? '/'),
        // The exporter is the only other user of node:http: its own calls are not traced.
        disableOutgoingRequestInstrumentation: true,
      }),
    ],
  });
  // An ES module's import does not pass the require hook that patches node:http: this does.
  createRequire(import.meta.url)('node:http');

  return {
    tracer: provider.getTracer(TRACER_NAME),
    setHttpRoute(route) {
      const metadata = getRPCMetadata(api.context.active());
      if (metadata?.type === RPCType.HTTP) metadata.route = route;
    },
    shutdown: () => provider.shutdown(),
  };
}
