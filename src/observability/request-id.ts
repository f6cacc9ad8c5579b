import { randomFillSync } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { BlockList, isIPv4, isIPv6 } from 'node:net'
import { AuthgateConfigError } from '../config/env.ts'
import { trustRule } from '../core/client-address.ts'
import { unmapIPv4 } from '../core/ip.ts'
import { kRequestId, shapeRawRequest } from '../core/raw-request.ts'

/** What an accepted incoming id may look like: printable, no spaces, bounded (it goes into logs and headers). */
const ACCEPTABLE = /^[A-Za-z0-9._:@/+=-]{1,128}$/

// On the raw request itself: a WeakMap entry per request costs more (and burdens the collector).
type WithId = IncomingMessage & { [kRequestId]?: string }

/** The id given to a raw request (for answers written without Fastify: client errors). */
export function requestIdOf(req: IncomingMessage): string | undefined {
  return (req as WithId)[kRequestId]
}

// A fresh id is a version 4 UUID in the form `crypto.randomUUID()` gives (lower-case hex,
// 8-4-4-4-12), from the same source: bytes of the system's CSPRNG drawn ahead in batches (256 ids
// at a time; Node.js's own entropy cache for `randomUUID` draws 128). Only the spelling differs:
// `randomUUID` joins twenty short strings per id (about 0.6 KB of heap a request); here each
// draw's 256 ids are spelled into one buffer and read out as one string, and an id is a slice of
// it (V8 keeps a slice of 13 characters or more as a view of the string it was cut from, smaller
// than a copy): one decoding, a call into C++, per 256 ids rather than per id.
const IDS_PER_DRAW = 256
const ID_LENGTH = 36
const entropy = Buffer.allocUnsafeSlow(16 * IDS_PER_DRAW)
const spelled = Buffer.allocUnsafeSlow(ID_LENGTH * IDS_PER_DRAW)
const HEX = Buffer.from('0123456789abcdef', 'latin1')
let ids = ''
let next = IDS_PER_DRAW

/** Draws entropy for the next 256 ids and spells them, one after the other, in `ids`. */
function drawIds(): void {
  randomFillSync(entropy)
  let out = 0
  for (let at = 0; at < entropy.length; at += 16) {
    // Version 4 (0100) in the high bits of byte 6, the RFC 9562 variant (10) in those of byte 8.
    entropy[at + 6] = (entropy[at + 6]! & 0x0f) | 0x40
    entropy[at + 8] = (entropy[at + 8]! & 0x3f) | 0x80
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) spelled[out++] = 0x2d // '-'
      const byte = entropy[at + i]!
      spelled[out++] = HEX[byte >> 4]!
      spelled[out++] = HEX[byte & 0x0f]!
    }
  }
  ids = spelled.toString('latin1')
  next = 0
}

/** A fresh request id: a random (version 4) UUID, as `crypto.randomUUID()` spells it. */
export function newRequestId(): string {
  if (next === IDS_PER_DRAW) drawIds()
  const at = next++ * ID_LENGTH
  return ids.slice(at, at + ID_LENGTH)
}

/** A BlockList of the trusted proxies (IPs and CIDRs, as AUTHGATE_TRUSTED_PROXIES gives them). */
export function trustedPeers(cidrs: readonly string[]): BlockList {
  const list = new BlockList()
  for (const item of cidrs) {
    const [addr, bits] = item.split('/') as [string, string | undefined]
    const type = isIPv4(addr) ? 'ipv4' : isIPv6(addr) ? 'ipv6' : undefined
    // The settings were checked when read; an entry that is no address here is a caller's mistake, not a skip.
    if (type === undefined)
      throw new AuthgateConfigError('trustedProxies', `not an IP address or CIDR range: ${JSON.stringify(item)}`)
    if (bits === undefined) list.addAddress(addr, type)
    else list.addSubnet(addr, Number(bits), type)
  }
  return list
}

/** Whether a connection's address is one of the trusted proxies (IPv4-mapped IPv6 read as IPv4). */
export function peerIsTrusted(peers: BlockList, address: string | undefined): boolean {
  if (address === undefined) return false
  const plain = unmapIPv4(address)
  if (plain !== address) return peers.check(plain, 'ipv4') || peers.check(address, 'ipv6')
  return peers.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')
}

/**
 * AUTHGATE_TRUSTED_PROXIES as Fastify's `trustProxy` function and the socket handshake's trust
 * rule: an address in any form a proxy writes (`IP:port`, `[v6]:port`, a zone id) is judged on
 * its normalised form.
 */
export function trustedProxyRule(cidrs: readonly string[]): (address: string) => boolean {
  const peers = trustedPeers(cidrs)
  return trustRule((address) => peerIsTrusted(peers, address))
}

/**
 * Fastify's `genReqId`: the incoming request id when the connection comes from a trusted proxy
 * (which set or passed it on) and it looks like an id; otherwise a fresh UUID (`newRequestId`). A client that talks
 * to authgate directly cannot choose the id other log lines are correlated by.
 */
export function requestIdGenerator(header: string, trustedProxies: readonly string[]) {
  const peers = trustedPeers(trustedProxies)
  const anyTrusted = trustedProxies.length > 0
  return function genReqId(req: IncomingMessage): string {
    let id: string | undefined
    if (anyTrusted) {
      const value = req.headers[header]
      const given = Array.isArray(value) ? value[0] : value
      if (given !== undefined && ACCEPTABLE.test(given) && peerIsTrusted(peers, req.socket?.remoteAddress)) id = given
    }
    id ??= newRequestId()
    // The first of authgate's own steps on a request Fastify routes: its properties, all at once.
    shapeRawRequest(req)
    ;(req as WithId)[kRequestId] = id
    return id
  }
}
