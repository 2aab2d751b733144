import { type FaultTable, parseFault } from './faults.js';
import { json, message, type Reply } from './http-io.js';
import type { RecordedRequests } from './recorded-requests.js';

export const CONTROL_PREFIX = '/__sandbox/';

export interface ControlDeps {
  log: RecordedRequests;
  faults: FaultTable;
  faultsEnabled: boolean;
}

const NO_CONTENT: Reply = { status: 204, body: '', contentType: 'text/plain' };

/**
 * The sandbox's own routes, for tests and the benchmark when the sandbox runs as another process.
 * They are never logged or counted, and never subject to faults.
 */
export function handleControl(
  deps: ControlDeps,
  method: string,
  path: string,
  body: unknown,
  bodyIsJson: boolean,
): Reply {
  const route = path.slice(CONTROL_PREFIX.length);
  if (route === 'requests') {
    if (method === 'GET') return json(200, { requests: deps.log.requests() });
    if (method === 'DELETE') {
      deps.log.clear();
      return NO_CONTENT;
    }
    return notAllowed('GET, DELETE');
  }
  if (route === 'counts') {
    return method === 'GET' ? json(200, { counts: deps.log.counts() }) : notAllowed('GET');
  }
  if (route === 'faults' || route.startsWith('faults/')) {
    if (!deps.faultsEnabled)
      return message(404, 'Fault injection is disabled (start with faults: true)');
    if (route === 'faults') {
      if (method !== 'DELETE') return notAllowed('DELETE');
      deps.faults.clear();
      return NO_CONTENT;
    }
    if (method !== 'PUT') return notAllowed('PUT');
    const [target = '', ...segments] = route.slice('faults/'.length).split('/');
    // A template's braces arrive percent-encoded (`{id}` is `%7Bid%7D` in a URL).
    const template = segments.join('/').replace(/%7B/gi, '{').replace(/%7D/gi, '}');
    const faultRoute = `${target.toUpperCase()} /${template}`;
    if (!/^[A-Z]+$/.test(target.toUpperCase()) || segments.length === 0) {
      return message(400, 'Use PUT /__sandbox/faults/<METHOD>/<path>');
    }
    const fault = bodyIsJson ? parseFault(body) : 'body must be a JSON fault object';
    if (typeof fault === 'string') return message(400, fault);
    deps.faults.set(faultRoute, fault);
    return NO_CONTENT;
  }
  return message(404, `Unknown sandbox control route ${path}`);
}

function notAllowed(allow: string): Reply {
  return { ...message(405, `Method not allowed; use ${allow}`), headers: { allow } };
}
