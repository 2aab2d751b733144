import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../../test/helpers/dns-server.js';
import { type Sandbox, startSandbox } from '../server.js';

interface Page {
  repositories: Array<{
    id: string;
    defaultBranch: string;
    branches: Record<string, { default: boolean; name: string; target: string }>;
    tags: Record<string, { name?: string; target: string; message?: string }>;
  }>;
  total: number;
  offset: number;
}

const HANG = '_service_custom_hostname.hang.test';
const FAIL = '_service_custom_hostname.servfail.test';

let dns: TestDnsServer;
let sandbox: Sandbox;

async function call(
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string>; on?: Sandbox } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const base = (options.on ?? sandbox).url;
  const body =
    options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, body: parsed, text };
}

async function page(
  query: string,
  headers: Record<string, string> = {},
  on?: Sandbox,
): Promise<Page> {
  const response = await call('GET', `/git/v1/repo${query}`, { headers, on });
  expect(response.status).toBe(200);
  return response.body as Page;
}

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set(HANG, { silent: true });
  dns.set(FAIL, { rcode: 'SERVFAIL' });
  sandbox = await startSandbox({
    repositories: 30,
    maxPageSize: 10,
    defaultPageSize: 4,
    faults: true,
    dnsServers: [dns.address],
    dnsTimeoutMs: 400,
  });
});

afterAll(async () => {
  await sandbox.close();
  await dns.close();
});

beforeEach(() => {
  sandbox.clearRequests();
  sandbox.clearFaults();
});

describe('sandbox', () => {
  it('pages the repository list by limit and offset', async () => {
    const all = await page('?limit=10');
    const slice = await page('?limit=3&offset=2');
    expect(slice.total).toBe(30);
    expect(slice.offset).toBe(2);
    expect(slice.repositories).toEqual(all.repositories.slice(2, 5));
    expect((await page('')).repositories).toHaveLength(4);
    expect((await page('?limit=0')).repositories).toEqual([]);
  });

  it('clamps limit to maxPageSize and returns empty pages past the end', async () => {
    const clamped = await page('?limit=1000&offset=25');
    expect(clamped.repositories).toHaveLength(5);
    expect((await page('?limit=500')).repositories).toHaveLength(10);
    expect(await page('?offset=30')).toEqual({ repositories: [], total: 30, offset: 30 });
    expect((await page('?offset=999999')).repositories).toEqual([]);
  });

  it('uses 20 and 100 as the default page size and cap', async () => {
    const defaults = await startSandbox();
    try {
      expect((await page('', {}, defaults)).repositories).toHaveLength(20);
      expect((await page('?limit=200', {}, defaults)).repositories).toHaveLength(50);
      expect((await page('?limit=200', {}, defaults)).total).toBe(50);
    } finally {
      await defaults.close();
    }
  });

  it('rejects a bad limit or offset with 400 naming the parameter', async () => {
    const cases = [
      ['limit=-1', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=', 'limit'],
      ['limit=99999999999999999999', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['offset=-3', 'offset'],
      ['offset=1e3', 'offset'],
      ['limit=2&offset=%20', 'offset'],
    ] as const;
    for (const [query, name] of cases) {
      const response = await call('GET', `/git/v1/repo?${query}`);
      expect(response.status, query).toBe(400);
      expect((response.body as { message: string }).message, query).toContain(`"${name}"`);
    }
  });

  it('seeds each token its own deterministic repositories', async () => {
    const alice = await page('?limit=10', { authorization: 'Bearer alice' });
    const again = await page('?limit=10', { authorization: 'bearer  alice' });
    const bob = await page('?limit=10', { authorization: 'Bearer bob' });
    const demo = await page('?limit=10');
    expect(again).toEqual(alice);
    expect(bob.repositories[0]?.id).not.toBe(alice.repositories[0]?.id);
    expect(demo.repositories[0]?.id).not.toBe(alice.repositories[0]?.id);
    const other = await startSandbox({ repositories: 30 });
    try {
      expect(await page('?limit=10', { authorization: 'Bearer alice' }, other)).toEqual(alice);
    } finally {
      await other.close();
    }
  });

  it('sends the Cache-Control it is given, and varies the list on a header it names', async () => {
    const varying = await startSandbox({
      repositoryCacheControl: 'max-age=30',
      repositoryVaryHeader: 'X-Tenant',
    });
    try {
      const page = (tenant?: string) =>
        call('GET', '/git/v1/repo?limit=2', {
          on: varying,
          headers: tenant === undefined ? {} : { 'x-tenant': tenant },
        });
      const [plain, one, two] = await Promise.all([page(), page('one'), page('two')]);
      expect(plain.headers.get('cache-control')).toBe('max-age=30');
      expect(plain.headers.get('vary')).toBe('x-tenant');
      const ids = (answer: { body: unknown }) =>
        (answer.body as Page).repositories.map((r) => r.id);
      expect(ids(one)).not.toEqual(ids(plain));
      expect(ids(two)).not.toEqual(ids(one));
      expect(ids(await page('one'))).toEqual(ids(one));
      expect((await call('GET', '/git/v1/repo')).headers.get('cache-control')).toBeNull();
    } finally {
      await varying.close();
    }
  });

  it('shapes repositories like the spec, with some nameless and message-less tags', async () => {
    const first = await page('?limit=10&offset=0');
    const rest = [await page('?limit=10&offset=10'), await page('?limit=10&offset=20')];
    const repositories = [first, ...rest].flatMap((p) => p.repositories);
    expect(new Set(repositories.map((r) => r.id)).size).toBe(30);
    for (const repository of repositories) {
      const names = Object.keys(repository.branches);
      expect(names[0]).toBe(repository.defaultBranch);
      expect(names.length).toBeGreaterThanOrEqual(1);
      expect(names.length).toBeLessThanOrEqual(4);
      expect(Object.keys(repository.tags).length).toBeLessThanOrEqual(3);
      for (const [name, branch] of Object.entries(repository.branches)) {
        expect(branch).toEqual({
          default: name === repository.defaultBranch,
          name,
          target: expect.stringMatching(/^[0-9a-f]{40}$/),
        });
      }
      for (const [name, tag] of Object.entries(repository.tags)) {
        expect(tag.target).toMatch(/^[0-9a-f]{40}$/);
        if (tag.name !== undefined) expect(tag.name).toBe(name);
      }
    }
    const tags = repositories.flatMap((r) => Object.values(r.tags));
    expect(tags.filter((tag) => tag.name === undefined).length).toBeGreaterThanOrEqual(4);
    expect(tags.some((tag) => tag.message === undefined)).toBe(true);
    expect(tags.some((tag) => typeof tag.message === 'string')).toBe(true);
  });

  it('answers 401 for a malformed Authorization header', async () => {
    for (const authorization of ['Basic abc', 'Bearer', 'Bearer    ', '', 'Token x']) {
      const response = await call('GET', '/git/v1/repo', { headers: { authorization } });
      expect(response.status, authorization).toBe(401);
      expect(response.body).toEqual({ message: expect.any(String) });
    }
  });

  it('answers 404 for unknown routes, 405 for wrong methods and 413 for huge bodies', async () => {
    expect((await call('GET', '/git/v1/repos')).status).toBe(404);
    expect((await call('GET', '/__proto__')).status).toBe(404);
    const wrong = await call('DELETE', '/git/v1/repo');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
    expect((await call('GET', '/domains/v1/verifications')).status).toBe(405);
    const huge = await call('POST', '/domains/v1/verifications', {
      raw: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(huge.status).toBe(413);
    expect(sandbox.counts()['POST /domains/v1/verifications']).toBe(1);
  });

  it('creates and verifies a domain against a real DNS server', async () => {
    const auth = { authorization: 'Bearer dns-user' };
    const created = await call('POST', '/domains/v1/verifications', {
      body: { domain: 'example.test' },
      headers: auth,
    });
    expect(created.status).toBe(200);
    const verification = created.body as Record<string, string>;
    expect(verification).toEqual({
      id: expect.any(String),
      domain: 'example.test',
      accountId: expect.stringMatching(/^acct_/),
      verificationCode: expect.stringMatching(/^\S{16,}$/),
      createdAt: expect.any(String),
    });
    expect(new Date(verification.createdAt ?? '').toISOString()).toBe(verification.createdAt);
    const code = verification.verificationCode ?? '';
    const verify = (domain: unknown, headers = auth) =>
      call('PUT', '/domains/v1/verifications', { body: { domain }, headers });

    const missing = await verify('example.test');
    expect(missing).toMatchObject({
      status: 400,
      body: { message: 'No TXT record found at _service_custom_hostname.example.test' },
    });
    dns.setTxt('_service_custom_hostname.example.test', ['not-the-code']);
    const wrong = await verify('example.test');
    expect(wrong.status).toBe(400);
    expect((wrong.body as { message: string }).message).toContain(
      'does not contain the verification code',
    );
    // A long value arrives as several character-strings; they are joined before comparing.
    dns.setTxt('_service_custom_hostname.example.test', [[code.slice(0, 10), code.slice(10)]]);
    const right = await verify('example.test');
    expect(right.status).toBe(200);
    expect(right.body).toEqual({
      domain: 'example.test',
      verified: true,
      verifiedAt: expect.any(String),
    });

    expect((await verify('example.test', { authorization: 'Bearer someone-else' })).status).toBe(
      404,
    );
    expect((await verify('unknown.test')).status).toBe(404);
    expect((await verify(undefined)).status).toBe(400);
    expect((await call('POST', '/domains/v1/verifications', { body: { domain: '' } })).status).toBe(
      400,
    );
    expect((await call('POST', '/domains/v1/verifications', { raw: 'nope' })).status).toBe(400);

    const replaced = await call('POST', '/domains/v1/verifications', {
      body: { domain: 'example.test' },
      headers: auth,
    });
    expect((replaced.body as { verificationCode: string }).verificationCode).not.toBe(code);
    expect((await verify('example.test')).status).toBe(400);
  });

  it('answers 503 when DNS times out or fails', async () => {
    for (const domain of ['hang.test', 'servfail.test']) {
      await call('POST', '/domains/v1/verifications', { body: { domain } });
      const started = Date.now();
      const response = await call('PUT', '/domains/v1/verifications', { body: { domain } });
      expect(response.status, domain).toBe(503);
      expect(Date.now() - started).toBeLessThan(1500);
    }
  });

  it('remembers dev servers per repository and reports running commands', async () => {
    const auth = { authorization: 'Bearer dev-user' };
    const request = (body: unknown, headers = auth) =>
      call('POST', '/ephemeral/v1/dev-servers', { body, headers });
    const first = await request({ repoId: 'r1', devCommand: 'npm run dev', installCommand: '  ' });
    expect(first).toMatchObject({
      status: 200,
      body: { isNew: true, devCommandRunning: true, installCommandRunning: false },
    });
    const body = first.body as Record<string, string>;
    expect(body.url).toMatch(/^https:\/\/[a-z0-9]+\.dev\.invalid$/);
    expect(body.mcpEphemeralUrl).toMatch(/^https:\/\/[a-z0-9]+\.mcp\.invalid$/);
    expect(body.ephemeralUrl).toBe(body.url);
    expect((await request({ repoId: 'r1', installCommand: 'npm ci' })).body).toMatchObject({
      isNew: false,
      devCommandRunning: false,
      installCommandRunning: true,
    });
    expect((await request({ repoId: 'r1' }, { authorization: 'Bearer other' })).body).toMatchObject(
      { isNew: true },
    );
    expect((await request({ repo: 'legacy', ports: [] })).body).toMatchObject({
      isNew: true,
      ephemeralUrl: null,
    });
    expect((await request({})).body).toMatchObject({ isNew: true });
    expect((await request({ ports: null, envVars: null, timeout: null })).body).toMatchObject({
      isNew: false,
    });
    const full = await request({
      repoId: 'r2',
      computeClass: 'low',
      timeout: 0,
      envVars: { A: '1' },
      ports: [
        { port: 8081, targetPort: 9000 },
        { port: 443, targetPort: 1 },
      ],
    });
    expect(full.status).toBe(200);
  });

  it('rejects bad dev server requests with 500 {response}', async () => {
    const bad: Array<[string, string]> = [
      ['{"ports":[{"port":80,"targetPort":3000}]}', 'port'],
      ['{"ports":[{"port":443,"targetPort":1},{"port":443,"targetPort":2}]}', 'more than once'],
      ['{"ports":[{"port":443,"targetPort":"x"}]}', 'targetPort'],
      ['{"ports":{}}', 'ports'],
      ['{"timeout":-1}', 'timeout'],
      ['{"timeout":1.5}', 'timeout'],
      ['{"envVars":{"A":1}}', 'envVars'],
      ['{"envVars":[]}', 'envVars'],
      ['{"devCommand":5}', 'devCommand'],
      ['[]', 'object'],
      ['{not json', 'JSON'],
      ['', 'required'],
    ];
    for (const [raw, mentions] of bad) {
      const response = await call('POST', '/ephemeral/v1/dev-servers', { raw });
      expect(response.status, raw).toBe(500);
      expect(response.body, raw).toEqual({ response: expect.stringContaining(mentions) });
    }
  });

  it('logs every request, including rejected ones, and counts them', async () => {
    await call('GET', '/git/v1/repo?limit=2&offset=1', {
      headers: { authorization: 'Bearer log', 'X-Trace': 't1' },
    });
    await call('GET', '/git/v1/repo?limit=nope');
    await call('POST', '/ephemeral/v1/dev-servers', { body: { repoId: 'x' } });
    await call('POST', '/ephemeral/v1/dev-servers', { raw: 'plain text' });
    await call('GET', '/__sandbox/counts');
    const requests = sandbox.requests();
    expect(requests).toHaveLength(4);
    expect(requests[0]).toMatchObject({
      method: 'GET',
      path: '/git/v1/repo',
      query: { limit: '2', offset: '1' },
      headers: { authorization: 'Bearer log', 'x-trace': 't1' },
      body: undefined,
    });
    expect(requests[1]?.query).toEqual({ limit: 'nope' });
    expect(requests[2]?.body).toEqual({ repoId: 'x' });
    expect(requests[3]?.body).toBe('plain text');
    expect(sandbox.counts()).toEqual({
      'GET /git/v1/repo': 2,
      'POST /ephemeral/v1/dev-servers': 2,
    });
    sandbox.clearRequests();
    expect(sandbox.requests()).toEqual([]);
    expect(sandbox.counts()).toEqual({});
  });

  it('keeps only the newest requests in the ring buffer but counts them all', async () => {
    const small = await startSandbox({ logLimit: 3 });
    try {
      for (let offset = 0; offset < 5; offset++) await page(`?offset=${offset}`, {}, small);
      expect(small.requests().map((r) => r.query.offset)).toEqual(['2', '3', '4']);
      expect(small.counts()['GET /git/v1/repo']).toBe(5);
    } finally {
      await small.close();
    }
  });

  it('injects status, body and header faults for the next N requests', async () => {
    sandbox.setFault('GET /git/v1/repo', {
      status: 503,
      body: { message: 'down' },
      headers: { 'retry-after': '2' },
      times: 2,
    });
    for (let i = 0; i < 2; i++) {
      const response = await call('GET', '/git/v1/repo');
      expect(response).toMatchObject({ status: 503, body: { message: 'down' } });
      expect(response.headers.get('retry-after')).toBe('2');
    }
    expect((await call('GET', '/git/v1/repo')).status).toBe(200);
    expect(sandbox.counts()['GET /git/v1/repo']).toBe(3);

    sandbox.setFault('POST /ephemeral/v1/dev-servers', { status: 500 });
    const shaped = await call('POST', '/ephemeral/v1/dev-servers', { body: {} });
    expect(shaped).toMatchObject({ status: 500, body: { response: expect.any(String) } });
    sandbox.setFault('PUT /domains/v1/verifications', { status: 502, body: 'Bad Gateway' });
    const raw = await call('PUT', '/domains/v1/verifications', { body: {} });
    expect(raw).toMatchObject({ status: 502, text: 'Bad Gateway' });
    expect(raw.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('injects delays, non-JSON, truncated, reset, oversized and short answers', async () => {
    sandbox.setFault('GET /git/v1/repo', { delayMs: 150, times: 1 });
    const started = Date.now();
    expect((await call('GET', '/git/v1/repo')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);

    sandbox.setFault('GET /git/v1/repo', { notJson: true, times: 1 });
    const html = await call('GET', '/git/v1/repo');
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(() => JSON.parse(html.text)).toThrow();

    sandbox.setFault('GET /git/v1/repo', { truncate: true, times: 1 });
    const truncated = await fetch(`${sandbox.url}/git/v1/repo?limit=10`);
    expect(truncated.status).toBe(200);
    await expect(truncated.text()).rejects.toThrow();

    sandbox.setFault('GET /git/v1/repo', { reset: true, times: 1 });
    await expect(fetch(`${sandbox.url}/git/v1/repo`)).rejects.toThrow();

    sandbox.setFault('GET /git/v1/repo', { oversizeBytes: 200_000, times: 1 });
    const big = await call('GET', '/git/v1/repo');
    expect(big.status).toBe(200);
    expect(Math.abs(Buffer.byteLength(big.text) - 200_000)).toBeLessThan(100);
    expect((big.body as Page).repositories).toHaveLength(4);

    sandbox.setFault('GET /git/v1/repo', { shortPage: 1, times: 1 });
    const short = (await call('GET', '/git/v1/repo')).body as Page;
    expect(short.repositories).toHaveLength(1);
    expect(short.total).toBeGreaterThan(1);

    expect((await call('GET', '/git/v1/repo')).status).toBe(200);
    expect(sandbox.counts()['GET /git/v1/repo']).toBe(7);
  });

  it('holds an answer until the gate set in-process opens, and refuses a gate over HTTP', async () => {
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    sandbox.setFault('GET /git/v1/repo', { until: gate, times: 1 });
    let answered = false;
    const held = call('GET', '/git/v1/repo').finally(() => {
      answered = true;
    });
    await vi.waitFor(() => expect(sandbox.counts()['GET /git/v1/repo']).toBe(1));
    expect(answered).toBe(false);
    open();
    expect((await held).status).toBe(200);

    const put = await call('PUT', '/__sandbox/faults/GET/git/v1/repo', { body: { until: 1 } });
    expect(put).toMatchObject({ status: 400, text: expect.stringMatching(/in-process only/) });
  });

  it('refuses faults unless enabled, and malformed routes', async () => {
    const plain = await startSandbox();
    try {
      expect(() => plain.setFault('GET /git/v1/repo', { status: 500 })).toThrow(/disabled/);
      const response = await call('PUT', '/__sandbox/faults/GET/git/v1/repo', {
        body: { status: 500 },
        on: plain,
      });
      expect(response.status).toBe(404);
    } finally {
      await plain.close();
    }
    expect(() => sandbox.setFault('/git/v1/repo', { status: 500 })).toThrow();
  });

  it('serves the control routes over HTTP without logging them', async () => {
    const put = await call('PUT', '/__sandbox/faults/GET/git/v1/repo', {
      body: { status: 502, times: 1 },
    });
    expect(put.status).toBe(204);
    expect(
      (await call('PUT', '/__sandbox/faults/GET/git/v1/repo', { body: { status: 'x' } })).status,
    ).toBe(400);
    expect((await call('GET', '/git/v1/repo?limit=1')).status).toBe(502);
    expect((await call('GET', '/git/v1/repo?limit=1')).status).toBe(200);

    const logged = await call('GET', '/__sandbox/requests');
    expect(logged.status).toBe(200);
    const { requests } = logged.body as {
      requests: Array<{ path: string; query: Record<string, string> }>;
    };
    expect(requests.map((r) => [r.path, r.query])).toEqual([
      ['/git/v1/repo', { limit: '1' }],
      ['/git/v1/repo', { limit: '1' }],
    ]);
    expect((await call('GET', '/__sandbox/counts')).body).toEqual({
      counts: { 'GET /git/v1/repo': 2 },
    });

    await call('PUT', '/__sandbox/faults/POST/ephemeral/v1/dev-servers', { body: { status: 500 } });
    expect((await call('DELETE', '/__sandbox/faults')).status).toBe(204);
    expect((await call('POST', '/ephemeral/v1/dev-servers', { body: {} })).status).toBe(200);

    expect((await call('DELETE', '/__sandbox/requests')).status).toBe(204);
    expect((await call('GET', '/__sandbox/counts')).body).toEqual({ counts: {} });
    expect(sandbox.requests()).toEqual([]);
  });

  it('closes promptly with idle and busy keep-alive connections open', async () => {
    const doomed = await startSandbox({ faults: true });
    const agent = new Agent({ keepAlive: true });
    const get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${doomed.url}${path}`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      expect(await get('/git/v1/repo')).toBe(200);
      expect(await get('/git/v1/repo')).toBe(200);
      doomed.setFault('POST /ephemeral/v1/dev-servers', { delayMs: 10_000 });
      const stuck = fetch(`${doomed.url}/ephemeral/v1/dev-servers`, {
        method: 'POST',
        body: '{}',
      }).catch((error: unknown) => error);
      await vi.waitFor(() => expect(doomed.counts()['POST /ephemeral/v1/dev-servers']).toBe(1));
      const started = Date.now();
      await doomed.close();
      expect(Date.now() - started).toBeLessThan(500);
      expect(await stuck).toBeInstanceOf(Error);
      await expect(fetch(`${doomed.url}/git/v1/repo`)).rejects.toThrow();
    } finally {
      agent.destroy();
    }
  });

  it('runs as a CLI that validates its environment and stops on SIGTERM', async () => {
    const run = (env: Record<string, string>) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'sandbox/main.ts'], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      return { child, out: () => stdout, err: () => stderr };
    };
    const bad = run({ SANDBOX_MAX_PAGE_SIZE: 'lots' });
    const good = run({ SANDBOX_PORT: '0', SANDBOX_FAULTS: 'true', SANDBOX_REPOSITORIES: '3' });
    const [code] = await once(bad.child, 'exit');
    expect(code).toBe(1);
    expect(bad.err().trim().split('\n')).toEqual([
      expect.stringContaining('SANDBOX_MAX_PAGE_SIZE'),
    ]);

    while (!good.out().includes('\n')) await once(good.child.stdout, 'data');
    const url = /^sandbox listening on (http:\/\/\S+)$/.exec(good.out().trim())?.[1];
    expect(url).toBeDefined();
    const response = await fetch(`${url}/git/v1/repo`);
    expect(((await response.json()) as Page).total).toBe(3);
    good.child.kill('SIGTERM');
    expect(await once(good.child, 'exit')).toEqual([0, null]);
  });
});
