import { readdirSync, readFileSync } from 'node:fs';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { type ISecret, Secret } from 'kubernetes-models/v1/Secret';
import { type IService, Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { JOB } from '../../scripts/observability/objectives.js';
import { PATHS } from '../../src/app.js';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config/load.js';
import { variablesOf } from '../../src/config/variable.js';
import { settingsSchema } from '../../src/config/variables.js';

const dir = new URL('../../deploy/kubernetes/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, dir), 'utf8');

type Manifest = { apiVersion: string; kind: string; metadata: { name: string } } & Record<
  string,
  unknown
>;

// One class per kind the manifests use; each validates against the Kubernetes OpenAPI schema.
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
};

const files = readdirSync(dir).filter(
  (name) => name.endsWith('.yaml') && name !== 'kustomization.yaml',
);
const manifests: Manifest[] = files.flatMap((name) =>
  parseAllDocuments(read(name)).map((document) => document.toJS() as Manifest),
);
function find<T>(kind: string, name = 'graphql-facade'): T {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as unknown as T;
}
const facadePod = () => {
  const pod = find<IDeployment>('Deployment').spec?.template.spec;
  const container = pod?.containers[0];
  if (!pod || !container) throw new Error('the Deployment has no container');
  return { pod, container };
};
const configData = () => find<IConfigMap>('ConfigMap').data ?? {};

describe('the Kubernetes manifests', () => {
  it('are each valid against the Kubernetes schemas', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(8);
    for (const manifest of manifests) {
      const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
      expect(Model, `${manifest.apiVersion} ${manifest.kind}`).toBeDefined();
      expect(() =>
        new (Model as NonNullable<typeof Model>)(manifest as never).validate(),
      ).not.toThrow();
    }
  });

  it('are all listed in the kustomization', () => {
    const kustomization = parseAllDocuments(read('kustomization.yaml'))[0]?.toJS() as {
      resources: string[];
    };
    expect([...kustomization.resources].sort()).toEqual([...files].sort());
  });

  it('probe the routes the facade serves, on the port it listens on', () => {
    const { container } = facadePod();
    const port = container.ports?.find((p) => p.name === 'http');
    expect(port?.containerPort).toBe(loadConfig(configData()).port);
    expect(container.readinessProbe?.httpGet).toEqual({ path: PATHS.readiness, port: 'http' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: PATHS.health, port: 'http' });
    expect(find<IService>('Service').spec?.ports?.[0]?.targetPort).toBe('http');
  });

  it('configure only variables the facade reads, and values it accepts', () => {
    const config = configData();
    const secret = find<ISecret>('Secret').stringData ?? {};
    for (const name of [...Object.keys(config), ...Object.keys(secret)]) {
      expect(CONFIG_VARIABLES, name).toContain(name);
    }
    expect(() => loadConfig({ ...config, ...secret })).not.toThrow();
    const redis = find<IService>('Service', 'graphql-facade-redis');
    expect(new URL(secret.REDIS_URL ?? '').host).toBe(
      `${redis.metadata?.name}:${redis.spec?.ports?.[0]?.port}`,
    );
  });

  it('give the drain its time: preStop sleep plus SHUTDOWN_GRACE_MS within the grace period', () => {
    const { pod, container } = facadePod();
    const sleep = Number(container.lifecycle?.preStop?.exec?.command?.[1]);
    const graceMs = loadConfig(configData()).shutdownGraceMs;
    expect(sleep).toBeGreaterThan(0);
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(
      sleep * 1000 + graceMs,
    );
  });

  it('run Redis with room for every bound the facade keeps in it, and never evicting a counter', () => {
    const redis = find<IDeployment>('Deployment', 'graphql-facade-redis').spec?.template.spec
      ?.containers[0];
    const args = redis?.args ?? [];
    const arg = (name: string) => args[args.indexOf(name) + 1];
    // docs/operations.md: under any other policy Redis evicts what it samples, counters included.
    expect(arg('--maxmemory-policy')).toBe('noeviction');
    const maxmemory = redisBytes(arg('--maxmemory'));
    // Every variable that bounds what the facade keeps in Redis, as the ConfigMap sets it or by
    // default: a new one counts here as soon as it is declared.
    const config = loadConfig(configData()) as unknown as Record<string, unknown>;
    const bounds = variablesOf(settingsSchema.shape)
      .filter((variable) => variable.name.endsWith('_REDIS_BYTES'))
      .map((variable) =>
        variable.path.reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], config),
      );
    expect(bounds.length).toBeGreaterThanOrEqual(2);
    const sum = bounds.reduce<number>((total, bound) => total + Number(bound), 0);
    // Each bound holds used_memory within 1.5 times (tested), and the counters, eviction keys and
    // Redis's own start need room too.
    expect(maxmemory).toBeGreaterThanOrEqual(1.5 * sum + 32 * MiB);
    // Redis's buffers and fragmentation are outside maxmemory: the container has room above it.
    expect(quantityBytes(String(redis?.resources?.limits?.memory))).toBeGreaterThanOrEqual(
      1.25 * maxmemory,
    );
  });
});

const MiB = 1024 * 1024;

/** A redis.conf memory size: `256mb` (MiB), `256m` (10^6), `268435456`. */
function redisBytes(value: string | undefined): number {
  const match = /^(\d+)(k|kb|m|mb|g|gb)?$/i.exec(value ?? '');
  if (!match) throw new Error(`not a Redis memory size: ${value}`);
  const units: Record<string, number> = {
    k: 1e3,
    kb: 1024,
    m: 1e6,
    mb: MiB,
    g: 1e9,
    gb: 1024 * MiB,
  };
  return Number(match[1]) * (match[2] ? (units[match[2].toLowerCase()] as number) : 1);
}

/** A Kubernetes memory quantity: `384Mi`, `1Gi`, `400M`. */
function quantityBytes(value: string): number {
  const match = /^(\d+)(Ki|Mi|Gi|k|M|G)?$/.exec(value);
  if (!match) throw new Error(`not a memory quantity: ${value}`);
  const units: Record<string, number> = {
    Ki: 1024,
    Mi: MiB,
    Gi: 1024 * MiB,
    k: 1e3,
    M: 1e6,
    G: 1e9,
  };
  return Number(match[1]) * (match[2] ? (units[match[2]] as number) : 1);
}

describe('the monitoring component', () => {
  const componentDir = new URL('components/monitoring/', dir);
  const readComponent = (name: string) => readFileSync(new URL(name, componentDir), 'utf8');
  const componentFiles = readdirSync(componentDir).filter(
    (name) => name.endsWith('.yaml') && name !== 'kustomization.yaml',
  );
  const resources: Manifest[] = componentFiles.flatMap((name) =>
    parseAllDocuments(readComponent(name)).map((document) => document.toJS() as Manifest),
  );
  const podMonitor = () =>
    resources.find((m) => m.kind === 'PodMonitor') as unknown as InstanceType<typeof PodMonitor>;

  it('is an optional kustomize Component listing each of its manifests', () => {
    const component = parseAllDocuments(readComponent('kustomization.yaml'))[0]?.toJS() as {
      apiVersion: string;
      kind: string;
      resources: string[];
    };
    expect(component.kind).toBe('Component');
    expect(component.apiVersion).toBe('kustomize.config.k8s.io/v1alpha1');
    expect([...component.resources].sort()).toEqual([...componentFiles].sort());
    // The base applies without the operator's CRDs: the component is enabled by choice.
    const base = parseAllDocuments(read('kustomization.yaml'))[0]?.toJS() as Record<
      string,
      unknown
    >;
    expect(base.components).toBeUndefined();
  });

  it("holds a PodMonitor and a PrometheusRule valid against the operator's schemas", () => {
    const models: Record<string, new (data: never) => { validate(): void }> = {
      PodMonitor,
      PrometheusRule,
    };
    expect(resources.map((m) => m.kind).sort()).toEqual(['PodMonitor', 'PrometheusRule']);
    for (const resource of resources) {
      expect(resource.apiVersion).toBe('monitoring.coreos.com/v1');
      const Model = models[resource.kind] as NonNullable<(typeof models)[string]>;
      expect(() => new Model(resource as never).validate(), resource.kind).not.toThrow();
    }
  });

  it("scrapes the facade pods' metrics route as the job the rules and the dashboard select", () => {
    const { pod, container } = facadePod();
    const template = find<IDeployment>('Deployment').spec?.template.metadata?.labels ?? {};
    const spec = podMonitor().spec;
    expect(template).toMatchObject(spec.selector.matchLabels ?? {});
    expect(template[spec.jobLabel ?? '']).toBe(JOB);
    const endpoint = spec.podMetricsEndpoints?.[0];
    expect(container.ports?.map((port) => port.name)).toContain(endpoint?.port);
    expect(endpoint?.path).toBe(PATHS.metrics);
    // METRICS_PORT would move /metrics off the port the PodMonitor scrapes.
    expect(configData().METRICS_PORT).toBeUndefined();
    expect(pod.containers).toHaveLength(1);
  });
});

describe('the Dockerfile', () => {
  const dockerfile = readFileSync(new URL('../../deploy/Dockerfile', import.meta.url), 'utf8');
  const scripts = (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;

  it('builds with the build script and runs what start:prod runs, as a user without privileges', () => {
    expect(dockerfile).toContain('RUN npm run build');
    expect(scripts.build).toBe('tsc -p tsconfig.build.json');
    expect(dockerfile).toMatch(/RUN npm ci --omit=dev/);
    const cmd = /^CMD \["node", (.+)\]$/m.exec(dockerfile)?.[1];
    const args = JSON.parse(`[${cmd}]`) as string[];
    expect(args.at(-1)).toBe('dist/src/main.js');
    // The shell npm starts becomes node (`exec`), so the signal npm forwards reaches node itself.
    expect(scripts['start:prod']).toMatch(/^NODE_ENV=production exec node .*dist\/src\/main\.js$/);
    // The node options that shape the process (docs/performance.md, "After idle") are the same
    // in the image and in start:prod; start:prod adds source maps for people reading stacks.
    for (const arg of args) expect(scripts['start:prod']?.split(' ')).toContain(arg);
    expect(args).toEqual(
      expect.arrayContaining(['--no-memory-reducer', '--max-semi-space-size=16']),
    );
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toContain(`EXPOSE ${loadConfig({}).port}`);
  });
});
