import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';

// One TXT query over UDP (RFC 1035), read with its TTL: Node's resolver gives none for TXT (only
// resolve4/resolve6 take `{ ttl: true }`) and no runtime dependency reads DNS messages. An answer
// too large for UDP is left to c-ares, which asks over TCP (docs/domains.md).

const TYPE_TXT = 16;
const TYPE_CNAME = 5;
const CLASS_IN = 1;
const TYPE_OPT = 41;
/** EDNS0's payload size that avoids IP fragmentation (the DNS flag day 2020 value). */
const UDP_PAYLOAD = 1232;

export interface TxtAnswer {
  rcode: number;
  truncated: boolean;
  values: string[];
  /** The smallest TTL of the records that make the answer (CNAMEs followed included), seconds. */
  ttlS: number | undefined;
}

export interface DnsServer {
  address: string;
  port: number;
}

/** A `host[:port]` entry of Resolver#getServers. */
export function parseServer(entry: string): DnsServer {
  const bracketed = /^\[(.+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { address: bracketed[1] as string, port: Number(bracketed[2] ?? 53) };
  if (isIPv6(entry)) return { address: entry, port: 53 };
  const [address = entry, port] = entry.split(':');
  return { address, port: Number(port ?? 53) };
}

/** `name` IN TXT, recursion desired, with an EDNS0 OPT record; undefined if `name` cannot be asked. */
export function encodeTxtQuery(id: number, name: string): Buffer | undefined {
  const labels = name.split('.').filter((label) => label !== '');
  const encoded = labels.map((label) => Buffer.from(label, 'latin1'));
  const nameBytes = encoded.reduce((sum, label) => sum + 1 + label.length, 1);
  if (nameBytes > 255 || encoded.some((label) => label.length > 63)) return undefined;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2); // RD
  header.writeUInt16BE(1, 4); // QDCOUNT
  header.writeUInt16BE(1, 10); // ARCOUNT: the OPT record
  const question = Buffer.alloc(4);
  question.writeUInt16BE(TYPE_TXT, 0);
  question.writeUInt16BE(CLASS_IN, 2);
  const opt = Buffer.alloc(11);
  opt.writeUInt16BE(TYPE_OPT, 1);
  opt.writeUInt16BE(UDP_PAYLOAD, 3);
  return Buffer.concat([
    header,
    ...encoded.flatMap((label) => [Buffer.of(label.length), label]),
    Buffer.of(0),
    question,
    opt,
  ]);
}

class Malformed extends Error {}

function readName(message: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let position = offset;
  let next = -1;
  for (let jumps = 0; ; ) {
    const length = message[position];
    if (length === undefined) throw new Malformed();
    if ((length & 0xc0) === 0xc0) {
      if (++jumps > 32 || position + 2 > message.length) throw new Malformed();
      if (next < 0) next = position + 2;
      position = message.readUInt16BE(position) & 0x3fff;
      continue;
    }
    if (length === 0) {
      if (next < 0) next = position + 1;
      return { name: labels.join('.'), next };
    }
    if (length > 63 || position + 1 + length > message.length) throw new Malformed();
    labels.push(message.toString('latin1', position + 1, position + 1 + length));
    position += 1 + length;
  }
}

/**
 * The answer to query `id` for `name`, or undefined for any other datagram (a stray or spoofed one
 * is ignored, not believed); throws Malformed when the answer cannot be read.
 */
export function decodeTxtAnswer(message: Buffer, id: number, name: string): TxtAnswer | undefined {
  if (message.length < 12 || message.readUInt16BE(0) !== id) return undefined;
  const flags = message.readUInt16BE(2);
  if ((flags & 0x8000) === 0) return undefined;
  const questions = message.readUInt16BE(4);
  const answers = message.readUInt16BE(6);
  let position = 12;
  for (let i = 0; i < questions; i++) {
    const question = readName(message, position);
    if (question.name.toLowerCase() !== name.toLowerCase().replace(/\.$/, '')) return undefined;
    position = question.next + 4;
  }
  const values: string[] = [];
  let ttlS: number | undefined;
  for (let i = 0; i < answers; i++) {
    position = readName(message, position).next;
    if (position + 10 > message.length) throw new Malformed();
    const type = message.readUInt16BE(position);
    const rrClass = message.readUInt16BE(position + 2);
    const ttl = message.readUInt32BE(position + 4);
    const length = message.readUInt16BE(position + 8);
    const data = position + 10;
    const end = data + length;
    if (end > message.length) throw new Malformed();
    if (rrClass === CLASS_IN && (type === TYPE_TXT || type === TYPE_CNAME))
      ttlS = Math.min(ttlS ?? ttl, ttl);
    if (rrClass === CLASS_IN && type === TYPE_TXT) {
      // The character-strings of one record make one value, as c-ares joins them.
      const chunks: string[] = [];
      for (let at = data; at < end; ) {
        const size = message[at] as number;
        if (at + 1 + size > end) throw new Malformed();
        chunks.push(message.toString('latin1', at + 1, at + 1 + size));
        at += 1 + size;
      }
      values.push(chunks.join(''));
    }
    position = end;
  }
  return { rcode: flags & 0x000f, truncated: (flags & 0x0200) !== 0, values, ttlS };
}

/** c-ares's code names, so that outcomes read the same whichever way was asked. */
const failure = (code: string) => Object.assign(new Error(code), { code });

/**
 * One query over a connected UDP socket (so ICMP unreachable is ECONNREFUSED); rejects with
 * ETIMEOUT, ECANCELLED, EBADRESP or EBADNAME.
 */
export function queryTxt(
  server: DnsServer,
  name: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TxtAnswer> {
  const id = randomInt(0x10000);
  const query = encodeTxtQuery(id, name);
  if (!query) return Promise.reject(failure('EBADNAME'));
  if (signal.aborted) return Promise.reject(failure('ECANCELLED'));
  const socket = dgram.createSocket(isIPv6(server.address) ? 'udp6' : 'udp4');
  return new Promise<TxtAnswer>((resolve, reject) => {
    let done = false;
    const finish = (error: Error | undefined, answer?: TxtAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.close();
      if (error) reject(error);
      else resolve(answer as TxtAnswer);
    };
    const onAbort = () => finish(failure('ECANCELLED'));
    const timer = setTimeout(() => finish(failure('ETIMEOUT')), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', (error: NodeJS.ErrnoException) =>
      finish(failure(error.code ?? 'ECONNREFUSED')),
    );
    socket.on('message', (message) => {
      let answer: TxtAnswer | undefined;
      try {
        answer = decodeTxtAnswer(message, id, name);
      } catch {
        finish(failure('EBADRESP'));
        return;
      }
      if (answer) finish(undefined, answer);
    });
    socket.connect(server.port, server.address, () => {
      socket.send(query);
    });
  });
}
