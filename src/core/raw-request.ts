import type { IncomingMessage } from 'node:http'

/**
 * What authgate keeps on Node.js's raw request (IncomingMessage), each under its own symbol:
 * the early rate-limit decision, the request id, the client IP, the watcher of the backend's
 * answer and whether the rate-limit store failed for it.
 *
 * Each property added to an object after it was built gives it another hidden class (V8's map),
 * and these were added in different orders by different routes: the request objects reaching
 * Node.js's own HTTP and stream functions came in five or more hidden classes, which turns their
 * property accesses megamorphic for the rest of the process (a lookup in V8's stub cache on every
 * request instead of an inlined check), the early 429's requests, which carry none of them,
 * included (docs/decisions.md, D200). `shapeRawRequest` adds all five at once, in this order,
 * the first time Fastify sees the request, so that a request carries either none of them or all.
 */
export const kDecision = Symbol('authgate.rateLimitDecision')
export const kRequestId = Symbol('authgate.requestId')
export const kClientIp = Symbol('authgate.clientIp')
export const kWatcher = Symbol('authgate.answerWatcher')
export const kStoreFailed = Symbol('authgate.rateLimitStoreFailed')

type Shaped = IncomingMessage & {
  [kDecision]?: unknown
  [kRequestId]?: unknown
  [kClientIp]?: unknown
  [kWatcher]?: unknown
  [kStoreFailed]?: unknown
}

/**
 * Gives the raw request all of authgate's properties, undefined until set, unless it has them.
 * The early decision, taken before Fastify sees the request, is the first of them: a request
 * that has it gets the others after it, in the same order as one that does not.
 */
export function shapeRawRequest(req: IncomingMessage): void {
  const raw = req as Shaped
  if (kRequestId in raw) return
  if (!(kDecision in raw)) raw[kDecision] = undefined
  raw[kRequestId] = undefined
  raw[kClientIp] = undefined
  raw[kWatcher] = undefined
  raw[kStoreFailed] = undefined
}
