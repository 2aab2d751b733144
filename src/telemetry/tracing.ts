import { createRequire } from 'node:module';
import type { Tracer } from '@opentelemetry/api';
import type { TracingConfig } from '../config.js';
import type { Logger } from './logger.js';
import { createPropagator, type PropagatorName } from './trace-context.js';

/** The running OpenTelemetry SDK: the tracer the facade's spans come from, and its shutdown. */
export interface Tracing {
  tracer: Tracer;
  /** Names the active server span after its route (`POST /graphql`) rather than its method alone. */
  setHttpRoute(route: string): void;
  /** Exports what is still buffered; called on the way out. */
  shutdown(): Promise<void>;
}

export const TRACER_NAME = 'graphql-rest-facade';

/**
 * Starts the SDK when `config.tracing` says spans are exported. The SDK and its exporters are
 * imported here, on demand: without an endpoint the process never loads them, and its request
 * path carries no span work. The SDK reads the rest of its `OTEL_*` variables itself: the
 * exporter its endpoint, headers, timeout and compression, the provider the sampler and span
 * limits, the batch processor `OTEL_BSP_*`, the environment detector the service name and
 * resource attributes. Must run before the HTTP server handles a request: the server span comes
 * from @opentelemetry/instrumentation-http, which patches node:http's Server when it is enabled.
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

  // The SDK reports a bad value of the variables it reads (and then uses its default), and a
  // failed export, through its diagnostic logger: into the log, as warnings and errors.
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
  // The OTEL_PROPAGATORS propagators, and an AsyncLocalStorage context manager.
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
  // An ES module's `import 'node:http'` does not pass the require hook that applies the patch:
  // requiring it once here does, and the patch (on Server.prototype) serves every importer.
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
