// A real DNS server on loopback for tests: UDP and TCP on the same port (c-ares retries a truncated
// UDP answer over TCP at the same address), answering from a table the test edits.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { Packet, TCPServer, UDPServer } from 'dns2';

/** How the server answers one name; a name not in the table is NXDOMAIN. */
export type NameBehaviour =
  /**
   * TXT records; a record given as an array is sent as several character-strings. `ttl` in
   * seconds, default 0 (an answer no resolver may keep).
   */
  | { txt: Array<string | string[]>; ttl?: number }
  /** The name exists but has no TXT record (NOERROR, no answers). */
  | { exists: true }
  | { rcode: 'REFUSED' | 'SERVFAIL' }
  /** No answer at all, as from a resolver that times out. */
  | { silent: true };

export interface DnsQuery {
  /** Lower-cased, no trailing dot. */
  name: string;
  type: number;
  transport: 'udp' | 'tcp';
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as DNS_SERVERS and the sandbox's dnsServers take it. */
  address: string;
  port: number;
  set(name: string, behaviour: NameBehaviour): void;
  /** Publishes TXT values at a name (replacing what was there). */
  setTxt(name: string, values: Array<string | string[]>): void;
  remove(name: string): void;
  queries(): DnsQuery[];
  /** Queries for one name (any type, any transport). */
  queriesFor(name: string): DnsQuery[];
  clearQueries(): void;
  close(): Promise<void>;
}

// RFC 1035 section 4.1.1; dns2 has them as Packet.RCODE at runtime but not in its types.
const RCODE = { FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 } as const;

const normalise = (name: string) => name.toLowerCase().replace(/\.$/, '');

export async function startDnsServer(): Promise<TestDnsServer> {
  const table = new Map<string, NameBehaviour>();
  const log: DnsQuery[] = [];

  const answer =
    (transport: DnsQuery['transport']) =>
    (request: Packet, send: (response: Packet) => Promise<Buffer>): void => {
      const response = Packet.createResponseFromRequest(request);
      response.header.aa = 1;
      response.header.ra = 1;
      const question = request.questions[0];
      if (!question) {
        response.header.rcode = RCODE.FORMERR;
        void send(response);
        return;
      }
      const name = normalise(question.name);
      log.push({ name, type: question.type, transport });
      const behaviour = table.get(name);
      if (behaviour && 'silent' in behaviour) return;
      if (!behaviour) response.header.rcode = RCODE.NXDOMAIN;
      else if ('rcode' in behaviour) response.header.rcode = RCODE[behaviour.rcode];
      else if ('txt' in behaviour && question.type === Packet.TYPE.TXT) {
        for (const data of behaviour.txt) {
          response.answers.push(
            Packet.createResourceFromQuestion(question, {
              type: Packet.TYPE.TXT,
              class: Packet.CLASS.IN,
              ttl: behaviour.ttl ?? 0,
              data,
            }),
          );
        }
      }
      void send(response).catch(() => {});
    };

  const { udp, tcp, port } = await bindPair(answer);
  return {
    address: `127.0.0.1:${port}`,
    port,
    set: (name, behaviour) => void table.set(normalise(name), behaviour),
    setTxt: (name, values) => void table.set(normalise(name), { txt: values }),
    remove: (name) => void table.delete(normalise(name)),
    queries: () => [...log],
    queriesFor: (name) => log.filter((query) => query.name === normalise(name)),
    clearQueries: () => void log.splice(0),
    async close() {
      await Promise.all([
        new Promise<void>((resolve) => udp.close(() => resolve())),
        new Promise<void>((resolve) => tcp.close(() => resolve())),
      ]);
    },
  };
}

type Handler = (request: Packet, send: (response: Packet) => Promise<Buffer>) => void;

/** UDP on an ephemeral port, then TCP on the same number; another process may hold it, so retry. */
async function bindPair(answer: (transport: 'udp' | 'tcp') => Handler) {
  for (let attempt = 0; ; attempt++) {
    const udp = new UDPServer();
    udp.on('request', answer('udp'));
    await udp.listen(0, '127.0.0.1');
    const { port } = udp.address();
    const tcp = new TCPServer();
    tcp.on('request', answer('tcp'));
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, '127.0.0.1', () => {
          tcp.off('error', reject);
          resolve();
        });
      });
      return { udp, tcp, port };
    } catch (error) {
      udp.close();
      if (attempt >= 10) throw error;
    }
  }
}

export interface SilentDnsServer {
  address: string;
  /** How many queries arrived (and were swallowed). */
  received(): number;
  close(): Promise<void>;
}

/** A resolver that never answers: a UDP socket that swallows every query. */
export async function startSilentDnsServer(): Promise<SilentDnsServer> {
  const socket = dgram.createSocket('udp4');
  let received = 0;
  socket.on('message', () => received++);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    received: () => received,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
