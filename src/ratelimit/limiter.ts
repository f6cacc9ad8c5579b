import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { kDecision } from '../core/raw-request.ts'
import { routeKey } from '../core/route-key.ts'
import { errorResponse, sendError, varyOrigin, wantsNewErrorShape } from '../errors.ts'
import { traceEvent } from '../core/trace-event.ts'
import { clientIp } from '../proxy/client-ip.ts'
import { clientKey } from './client-key.ts'
import type { RateLimitConfig } from './config.ts'
import { policyHeader, rateLimitHeader, retryAfterSeconds } from './headers.ts'
import { MemoryStore } from './memory-store.ts'
import { RedisStore } from './redis-store.ts'
import type { Decision, RateLimitStore } from './store.ts'
import { createDecider, type Verdict } from './decide.ts'
import { warnAtMostEvery } from './throttled-warning.ts'
import { throttle } from '../core/log-throttle.ts'
import type { Budget } from './abuse-config.ts'
import { accountKeyer, limitedAccount, messageChannel } from './account-key.ts'
import type { RateLimitPolicy } from './policy.ts'
import type { ErrorCode } from '../errors.ts'
import { refusedCredentials, watchAnswer } from '../core/answer-watch.ts'
import { deviceCookies, devicePolicy } from './device-cookie.ts'

/**
 * A route's onRequest hook: callback style for a store that decides synchronously (no promise
 * between the request and its 429), async for one that does not (Redis).
 */
export type RateLimitHook =
  | ((request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void)
  | ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>)

export interface RateLimitCounters {
  allowed: number
  denied: number
  /** Decisions the store could not make (Redis down, slow or erroring). */
  storeErrors: number
  /** Of those, let through (AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR=open) ... */
  failedOpen: number
  /** ... or answered 429 (=closed). */
  failedClosed: number
  /** Denials by `limit\troute` (limit: client, account, account_device, email_budget, email_budget_client, sms_budget, sms_budget_client). */
  deniedBy: Map<string, number>
}

/** Which of authgate's limits answered a 429 (the `limit` of the log line and the metric). */
export type LimitKind =
  'client' | 'account' | 'account_device' | 'email_budget' | 'email_budget_client' | 'sms_budget' | 'sms_budget_client'
/**
 * A 429 written without Fastify (src/http/early-refusal.ts): the same headers and body as the hook's.
 * One object per route and shape, filled in for each refusal: valid until the route's next
 * decision, which is time enough to write it (Node.js copies the header list into the head).
 */
export interface EarlyRefusal {
  /**
   * Name, value, name, value, ...: the first pair the caller's to fill (the request id), then
   * `Vary`, as the hook's reply has it, then the hook's own, `Content-Length` last.
   */
  headers: string[]
  /**
   * A string, not a Buffer: Node.js writes a string body and the head as one string in one write,
   * where a Buffer goes out as a second chunk through writev, which cost the early 429 about a
   * seventh of its throughput (docs/decisions.md, D48).
   */
  body: string
  /**
   * How the head and body go to the socket: `latin1` when every character of the answer is ASCII,
   * whose bytes are then the same as UTF-8's, copied as they are instead of converted (the
   * request id and the two values filled in are ASCII too); `utf8`, Node.js's default, otherwise.
   */
  encoding: 'latin1' | 'utf8'
  /** The `x-sb-error-code` sent, for the log line. */
  code: string | undefined
}

/** What the per-account limit said of a request: go on, refused (over the limit), or no decision (fail-closed). */
export type AccountVerdict =
  | { kind: 'pass' }
  | { kind: 'refused'; policy: RateLimitPolicy; decision: Decision; device: boolean }
  | { kind: 'unavailable' }

export type EarlyDecider = (req: IncomingMessage, ip: string) => EarlyRefusal | undefined

/** A refusal for a caller that writes its own answer (a socket handshake): status, headers, body. */
export interface RawRefusal {
  status: number
  headers: Record<string, string>
  body: string
}

/** The per-client decision of a request Fastify does not see: the refusal, or undefined to go on. */
export type RawDecider = (req: IncomingMessage, ip: string) => Promise<RawRefusal | undefined>

export interface RateLimiter {
  /** onRequest hook for a route, or undefined when that route is not limited. */
  hookFor(method: string, template: string): RateLimitHook | undefined
  /**
   * preHandler hook for a route (after body validation): the per-account limit and the e-mail and
   * SMS budgets, keyed from the validated body; undefined when none applies to the route.
   */
  bodyHookFor(method: string, template: string): RateLimitHook | undefined
  /**
   * `POST /token`'s per-account limit for a password sign-in that authgate sends to Supabase Auth
   * itself (the consent page's form): the same buckets, device cookies and reservation. The caller
   * reports Supabase Auth's answer with `reportAnswer` (src/core/answer-watch.ts), as the relay
   * does. Undefined when no account limit applies to `POST /token`.
   */
  passwordSignIn:
    ((request: FastifyRequest, reply: FastifyReply, identifier: string) => Promise<AccountVerdict>) | undefined
  /** The early decision for a route, or undefined when it is not limited or the store decides asynchronously. */
  earlyDeciderFor(method: string, template: string): EarlyDecider | undefined
  /**
   * The per-client limit of a route whose requests never reach Fastify's hooks (Realtime's socket
   * handshake, taken from the server's `upgrade` event): the bucket, decision, failure policy,
   * counters and log line of the route's hook, its refusal in the `{code, message}` shape for the
   * caller to write. Undefined when the route is not limited.
   */
  rawDeciderFor(method: string, template: string): RawDecider | undefined
  /** Live counters (read them; do not write). */
  readonly counters: Readonly<RateLimitCounters>
  readonly store: RateLimitStore
  /**
   * Waits until the store can decide, at most `timeoutMs` (default 2 s); call before listening so
   * the first requests are limited. Never throws: an unreachable Redis is logged and the failure
   * policy applies until it comes up.
   */
  ready(timeoutMs?: number): Promise<boolean>
  close(): Promise<void>
}

export interface RateLimiterOptions {
  /** Use this store instead of the one the configuration selects (tests, custom backends). */
  store?: RateLimitStore
  /**
   * Whether Supabase Auth confirms sign-ups of a channel without a message (`/settings`
   * `mailer_autoconfirm`, `phone_autoconfirm`); undefined when unknown. A sign-up it confirms
   * sends nothing and draws on no budget.
   */
  autoconfirms?: (channel: 'email' | 'sms') => Promise<boolean | undefined>
}

type Logger = Pick<FastifyBaseLogger, 'warn' | 'info'>

const UNAVAILABLE_MESSAGE = 'Rate limiting is temporarily unavailable; try again shortly'

// The 429 a client over its limit gets, rendered once by the one error writer: the flood an
// attacker sends should cost no more than the decision and one write. `Vary` is merged per reply
// (the CORS layer may have set it).
const DENIED_LEGACY = errorResponse('over_request_rate_limit', false)
const DENIED_CURRENT = errorResponse('over_request_rate_limit', true)
const { vary: _legacyVary, ...DENIED_LEGACY_HEADERS } = DENIED_LEGACY.headers
const { vary: _currentVary, ...DENIED_CURRENT_HEADERS } = DENIED_CURRENT.headers
const DENIED_LEGACY_BODY = Buffer.from(DENIED_LEGACY.body)
const DENIED_CURRENT_BODY = Buffer.from(DENIED_CURRENT.body)
const DENIED_LEGACY_LENGTH = String(DENIED_LEGACY_BODY.length)
// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/
const DENIED_CURRENT_LENGTH = String(DENIED_CURRENT_BODY.length)

/** The refusal's headers after `Vary`, for the hook and the early refusal alike. */
function deniedHeaders(
  current: boolean,
  policy: RateLimitPolicy,
  policyValue: string,
  decision: Decision,
): Record<string, string> {
  return {
    ...(current ? DENIED_CURRENT_HEADERS : DENIED_LEGACY_HEADERS),
    'ratelimit-policy': policyValue,
    ratelimit: rateLimitHeader(policy, decision),
    'retry-after': String(retryAfterSeconds(decision)),
  }
}

/** A route's per-client limit: its policy and the strings its decisions and refusals use. */
interface ClientLimit {
  policy: RateLimitPolicy
  /** The bucket's name and separator, the client's key appended per request. */
  bucket: string
  /** The RateLimit-Policy header's value. */
  policyValue: string
  prefixLength: number
  route: string
  /** The key its refusals are counted and their log lines throttled by. */
  deniedKey: string
}

// A decision made early (src/http/early-refusal.ts), kept on the raw request for the route's hook.
type WithDecision = IncomingMessage & { [kDecision]?: Decision }

/**
 * Bucket name for a route template. Keys are (template, client), not (method, template): routes
 * that share a template share a bucket (docs/decisions.md, D11). Braces become `:` because Redis
 * Cluster and key-hashing proxies read `{...}` as a hash tag and would pile every passkey
 * bucket onto one shard.
 */
export function bucketName(template: string): string {
  return template.replace(/\{([^}]*)\}/g, ':$1')
}

export function createRateLimiter(
  config: RateLimitConfig,
  logger: Logger,
  options: RateLimiterOptions = {},
): RateLimiter {
  const counters: RateLimitCounters = {
    allowed: 0,
    denied: 0,
    storeErrors: 0,
    failedOpen: 0,
    failedClosed: 0,
    deniedBy: new Map(),
  }
  const warn = warnAtMostEvery(10_000, logger)
  // One line per limit and route at most every 10 s, with the count it stands for: which limit
  // answered where, never who (no address, no account).
  const denialLines = throttle(10_000, { maxKeys: 200 })
  // `key` is `limit\troute`, built once per route by the hot paths.
  const denied = (limit: LimitKind, route: string, key = `${limit}\t${route}`) => {
    counters.denied++
    counters.deniedBy.set(key, (counters.deniedBy.get(key) ?? 0) + 1)
    const line = denialLines.take(key)
    if (line.write) logger.info({ limit, route, occurrences: line.occurrences }, 'rate limit reached')
  }
  let degraded = false
  const store =
    options.store ??
    createStore(config, (err) => {
      degraded = true
      warn(err, 'rate-limit store connection error')
    })
  store.onStatusChange?.((status) => {
    if (status !== 'up') return
    if (degraded) logger.info('rate-limit store reachable again; limiting resumed')
    degraded = false
  })
  const closed = config.onRedisError === 'closed'
  /** A store that could not decide: said at most once per 10 s with the policy that answers. */
  const decider = createDecider(store, config.onRedisError, counters, (err) => {
    degraded = true
    warn(
      err,
      closed
        ? 'rate-limit store unavailable: refusing limited requests (fail-closed)'
        : 'rate-limit store unavailable: allowing limited requests (fail-open)',
    )
  })
  /** The answer of a limit whose store could not decide, under the fail-closed policy. */
  const unavailable = (request: FastifyRequest, reply: FastifyReply) =>
    sendError(request, reply, 'over_request_rate_limit', UNAVAILABLE_MESSAGE, { 'Retry-After': '1' })

  /**
   * A route's per-client limit, as the hook, the early refusal and the socket handshake read it:
   * one object per route, its strings shared by all three. The counters' map is keyed by
   * `deniedKey`, and a key equal to the stored one but another string is compared character by
   * character on every refusal: with a shared store the hook counts a client's first refusal and
   * the early refusal the rest, which cost the early 429 about 0.26 k instructions a refusal
   * (docs/decisions.md, D275).
   */
  const clientLimits = new Map<string, ClientLimit | undefined>()
  function clientLimitOf(method: string, template: string): ClientLimit | undefined {
    const route = routeKey(method, template)
    if (clientLimits.has(route)) return clientLimits.get(route)
    const policy = config.routes.get(route)
    const limit = policy && {
      policy,
      bucket: bucketName(template) + '|',
      policyValue: policyHeader(policy),
      prefixLength: config.ipv6PrefixLength,
      route,
      deniedKey: `client\t${route}`,
    }
    clientLimits.set(route, limit)
    return limit
  }

  function hookFor(method: string, template: string): RateLimitHook | undefined {
    const limit = clientLimitOf(method, template)
    if (!limit) return undefined
    const { policy, bucket, policyValue, prefixLength, route, deniedKey } = limit

    const deny = (request: FastifyRequest, reply: FastifyReply, decision: Decision) => {
      denied('client', route, deniedKey)
      traceEvent(request, 'rate_limit.denied', { limit: 'client', route })
      const current = wantsNewErrorShape(request.headers['x-supabase-api-version'])
      varyOrigin(reply)
      return reply
        .code(429)
        .headers(deniedHeaders(current, policy, policyValue, decision))
        .send(current ? DENIED_CURRENT_BODY : DENIED_LEGACY_BODY)
    }
    const allow = (reply: FastifyReply, decision: Decision) => {
      reply.header('RateLimit-Policy', policyValue)
      reply.header('RateLimit', rateLimitHeader(policy, decision))
      return undefined
    }
    /** The route hook's rendering of a verdict. */
    const render = (request: FastifyRequest, reply: FastifyReply, verdict: Verdict) => {
      if (verdict.kind === 'allow') return allow(reply, verdict.decision)
      if (verdict.kind === 'deny') return deny(request, reply, verdict.decision)
      reply.header('RateLimit-Policy', policyValue)
      return verdict.open ? undefined : unavailable(request, reply)
    }

    // A store that decides synchronously: no promise between the decision and the answer, and a
    // callback-style hook, which Fastify runs without a promise and a microtask of its own.
    const decideSync = decider.decideSync
    if (decideSync) {
      return function rateLimit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
        // Decided already (and counted) when the request came through the early refusal;
        // otherwise keyed on the same derived client IP the forwarder sends to the backend.
        const early = (request.raw as WithDecision)[kDecision]
        const verdict: Verdict =
          early !== undefined
            ? { kind: 'allow', decision: early }
            : decideSync(bucket + clientKey(clientIp(request), prefixLength), policy)
        if (verdict.kind === 'deny') {
          // Answered here: Fastify goes no further when a callback hook sends and does not call done.
          render(request, reply, verdict)
          return
        }
        render(request, reply, verdict)
        done()
      }
    }
    return async function rateLimit(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
      // The same derived client IP the forwarder sends to the backend.
      const key = bucket + clientKey(clientIp(request), prefixLength)
      return render(request, reply, await decider.decide(request.raw, key, policy))
    }
  }

  const accounts = config.accounts
  const budgets = config.budgets
  const keyOf = accounts ? accountKeyer(accounts.secret) : undefined
  const devices = accounts?.deviceCookie === true ? deviceCookies(accounts.secret) : undefined

  /**
   * The body hook's rendering of a verdict: the decision, undefined when the store could not decide
   * and the failure policy lets the request through, true when it answered (fail-closed).
   */
  async function decide(
    request: FastifyRequest,
    reply: FastifyReply,
    key: string,
    policy: RateLimitPolicy,
  ): Promise<Decision | undefined | true> {
    const verdict = await decider.decide(request.raw, key, policy)
    if (verdict.kind !== 'unavailable') return verdict.decision
    if (verdict.open) return undefined
    unavailable(request, reply)
    return true
  }

  function refuse(
    request: FastifyRequest,
    reply: FastifyReply,
    policy: RateLimitPolicy,
    decision: Decision,
    refusal: { limit: LimitKind; route: string; code: ErrorCode; message: string },
  ): void {
    denied(refusal.limit, refusal.route)
    traceEvent(request, 'rate_limit.denied', { limit: refusal.limit, route: refusal.route })
    sendError(request, reply, refusal.code, refusal.message, {
      'RateLimit-Policy': policyHeader(policy),
      RateLimit: rateLimitHeader(policy, decision),
      'Retry-After': String(retryAfterSeconds(decision)),
    })
  }

  /** Gives a unit back, best effort: a store that cannot is logged, and the unit stays spent. */
  function refund(key: string, policy: RateLimitPolicy): void {
    store.refund?.(key, policy).catch((err: unknown) => {
      counters.storeErrors++
      warn(err, 'rate-limit store could not give back a unit; it stays spent')
    })
  }

  /**
   * The per-account limit of a route, charged for one account: the account's bucket, or the bucket
   * of a browser that signed in to it before (its device cookie), so strangers' failures cannot lock
   * it out and its own failures spend only its budget. On a password sign-in the unit is held as a
   * reservation until Supabase Auth answers (the answer watch): given back unless the answer says
   * the password was wrong, so only failures count and parallel guesses can never run past the
   * bucket; a browser that signed in gets its device cookie.
   */
  function accountCharger(template: string, accountPolicy: RateLimitPolicy, passwordSignIn: boolean) {
    const accountBucket = 'acct|' + bucketName(template) + '|'
    const knownDevice = passwordSignIn ? devicePolicy(accountPolicy) : undefined
    const deviceBucket = 'acct-dev|' + bucketName(template) + '|'
    return async (request: FastifyRequest, reply: FastifyReply, identifier: string): Promise<AccountVerdict> => {
      const device = knownDevice !== undefined ? devices?.deviceOf(request.headers.cookie, identifier) : undefined
      const key = device !== undefined ? deviceBucket + device : accountBucket + keyOf!(identifier)
      const policy = device !== undefined ? knownDevice! : accountPolicy
      const verdict = await decider.decide(request.raw, key, policy)
      if (verdict.kind === 'unavailable' && !verdict.open) return { kind: 'unavailable' }
      const decision = verdict.kind === 'unavailable' ? undefined : verdict.decision
      if (decision !== undefined && !decision.allowed)
        return { kind: 'refused', policy, decision, device: device !== undefined }
      if (passwordSignIn) {
        watchAnswer(request.raw, (status, errorCode) => {
          if (decision !== undefined && !refusedCredentials(status, errorCode)) refund(key, policy)
          // Set before the relay writes the head: it merges the reply's own headers.
          if (devices !== undefined && device === undefined && status >= 200 && status < 300)
            reply.header('set-cookie', devices.issue(identifier, cookiePath(request), request.protocol === 'https'))
        })
      }
      return { kind: 'pass' }
    }
  }

  /** `POST /token`'s account limit for a password sign-in authgate sends itself (see passwordSignIn). */
  const tokenAccountPolicy = accounts?.routes.get('POST /token')
  const chargeSignIn =
    tokenAccountPolicy !== undefined && keyOf !== undefined
      ? accountCharger('/token', tokenAccountPolicy, true)
      : undefined
  const passwordSignIn =
    chargeSignIn &&
    (async (request: FastifyRequest, reply: FastifyReply, identifier: string): Promise<AccountVerdict> => {
      const verdict = await chargeSignIn(request, reply, identifier)
      if (verdict.kind === 'refused') {
        // Counted and logged as the /token hook's refusal is: the limit and the route it guards.
        const limit = verdict.device ? 'account_device' : 'account'
        denied(limit, 'POST /token')
        traceEvent(request, 'rate_limit.denied', { limit, route: 'POST /token' })
      }
      return verdict
    })

  function bodyHookFor(method: string, template: string): RateLimitHook | undefined {
    const route = routeKey(method, template)
    const accountPolicy = accounts?.routes.get(route)
    const sendsMessages =
      budgets?.routes.has(route) === true && (budgets.email !== undefined || budgets.sms !== undefined)
    if (accountPolicy === undefined && !sendsMessages) return undefined
    const passwordOnly = route === 'POST /token'
    const signUp = route === 'POST /signup'
    const prefixLength = config.ipv6PrefixLength
    const accountRefusal = {
      limit: 'account',
      route,
      code: 'over_request_rate_limit',
      message: 'Too many requests for this account; try again later',
    } as const
    const deviceRefusal = {
      limit: 'account_device',
      route,
      code: 'over_request_rate_limit',
      message: 'Too many requests for this account from this device; try again later',
    } as const
    const chargeAccount =
      accountPolicy !== undefined && keyOf !== undefined
        ? accountCharger(template, accountPolicy, passwordOnly)
        : undefined

    return async function abuseLimit(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
      if (chargeAccount !== undefined) {
        const grant = (request.query as Record<string, unknown> | undefined)?.grant_type
        const identifier = limitedAccount(route, grant, request.body)
        if (identifier !== undefined) {
          const verdict = await chargeAccount(request, reply, identifier)
          if (verdict.kind === 'unavailable') {
            unavailable(request, reply)
            return reply
          }
          if (verdict.kind === 'refused') {
            refuse(request, reply, verdict.policy, verdict.decision, verdict.device ? deviceRefusal : accountRefusal)
            return reply
          }
        }
      }
      if (!sendsMessages) return undefined
      const channel = messageChannel(request.body)
      const budget: Budget | undefined =
        channel === 'sms' ? budgets?.sms : channel === 'email' ? budgets?.email : undefined
      if (budget === undefined || channel === undefined) return undefined
      if (signUp && (await options.autoconfirms?.(channel)) === true) return undefined
      const what = channel === 'sms' ? 'SMS' : 'e-mail'
      const code: ErrorCode = channel === 'sms' ? 'over_sms_send_rate_limit' : 'over_email_send_rate_limit'
      const budgetRefusal = {
        limit: `${channel}_budget`,
        route,
        code,
        message: `The ${what} budget is spent for now; try again later`,
      } as const
      const global = await decide(request, reply, `budget|${channel}`, budget.policy)
      if (global === true) return reply
      if (global !== undefined && !global.allowed) {
        refuse(request, reply, budget.policy, global, budgetRefusal)
        return reply
      }
      // The client's share: its bucket is charged on every message, but it answers only while the
      // budget everyone shares is short (below half). A client alone is never refused while there
      // is room; one that sprays from one address is held to its share as soon as it eats into
      // everyone else's (docs/decisions.md, D61).
      const client = clientKey(clientIp(request), prefixLength)
      const shareKey = `budget|${channel}|client|${client}`
      const share = await decide(request, reply, shareKey, budget.clientPolicy)
      if (share === true) {
        if (global !== undefined) refund(`budget|${channel}`, budget.policy)
        return reply
      }
      if (share === undefined || share.allowed) return undefined
      if (global === undefined || !contended(global, budget.policy)) return undefined
      refund(`budget|${channel}`, budget.policy)
      refuse(request, reply, budget.clientPolicy, share, {
        limit: `${channel}_budget_client`,
        route,
        code,
        message: `This client has sent its share of ${what === 'SMS' ? 'SMS' : 'e-mails'} for now; try again later`,
      })
      return reply
    }
  }

  function earlyDeciderFor(method: string, template: string): EarlyDecider | undefined {
    const limit = clientLimitOf(method, template)
    // A store in the process decides every request here; a shared one answers only the refusals
    // it already knows, and the rest go on to the hook and its round trip.
    if (!limit || (!store.takeSync && !store.cachedDenial)) return undefined
    const { policy, bucket, policyValue, prefixLength, route, deniedKey } = limit
    // One answer per shape for every refusal of the route, its header list filled in place: the
    // same headers as deniedHeaders, flat, after the caller's request id. A flood of refusals then
    // builds no list, no object and no header value per request (docs/decisions.md, D153).
    const answer = (current: boolean): EarlyRefusal => {
      const headers = [
        '',
        '',
        'vary',
        'Origin',
        ...Object.entries(current ? DENIED_CURRENT_HEADERS : DENIED_LEGACY_HEADERS).flat(),
        'ratelimit-policy',
        policyValue,
        'ratelimit',
        '',
        'retry-after',
        '',
        'content-length',
        current ? DENIED_CURRENT_LENGTH : DENIED_LEGACY_LENGTH,
      ]
      const body = current ? DENIED_CURRENT.body : DENIED_LEGACY.body
      // The values filled in per refusal: the policy's name and numbers (RateLimit), digits.
      const ascii = [...headers, body, policy.name].every((text) => ASCII.test(text))
      return {
        headers,
        body,
        encoding: ascii ? 'latin1' : 'utf8',
        code: (current ? DENIED_CURRENT_HEADERS : DENIED_LEGACY_HEADERS)['x-sb-error-code'],
      }
    }
    const legacy = answer(false)
    const current = answer(true)
    // Where the two values go: the same places from the end in both shapes (the current one has
    // one header more, its version).
    const RATELIMIT_FROM_END = 5
    const RETRY_AFTER_FROM_END = 3
    // RateLimit and Retry-After of a refusal by its whole seconds to wait (all a refusal's two
    // values depend on, its `r` being 0), rendered once each: a window's worth at most.
    const rendered = new Map<number, [string, string]>()
    // The last client's key: a flood comes from one address over and over, so its key is built,
    // checked and hashed once instead of per request (a fresh string per refusal cost its own
    // hash and a character-wise compare in the store's map; docs/decisions.md, D200).
    let lastIp: string | undefined
    let lastKey = ''
    return (req, ip) => {
      if (ip !== lastIp) {
        lastKey = bucket + clientKey(ip, prefixLength)
        lastIp = ip
      }
      const decision = decider.decideNow(lastKey, policy)
      if (decision === undefined) return undefined
      if (decision.allowed) {
        ;(req as WithDecision)[kDecision] = decision
        return undefined
      }
      // Counted and logged as the hook's refusal is (which limit, which route).
      denied('client', route, deniedKey)
      const refusal = wantsNewErrorShape(req.headers['x-supabase-api-version']) ? current : legacy
      const seconds = retryAfterSeconds(decision)
      const reusable = decision.remaining === 0 && seconds < 4096
      let values = reusable ? rendered.get(seconds) : undefined
      if (values === undefined) {
        values = [rateLimitHeader(policy, decision), String(seconds)]
        if (reusable) rendered.set(seconds, values)
      }
      const headers = refusal.headers
      headers[headers.length - RATELIMIT_FROM_END] = values[0]
      headers[headers.length - RETRY_AFTER_FROM_END] = values[1]
      return refusal
    }
  }

  function rawDeciderFor(method: string, template: string): RawDecider | undefined {
    const limit = clientLimitOf(method, template)
    if (!limit) return undefined
    const { policy, bucket, policyValue, prefixLength, route, deniedKey } = limit
    const unavailableAnswer = errorResponse(
      { code: 'over_request_rate_limit', message: UNAVAILABLE_MESSAGE, headers: { 'Retry-After': '1' } },
      true,
    )
    return async (req, ip) => {
      const verdict = await decider.decide(req, bucket + clientKey(ip, prefixLength), policy)
      if (verdict.kind === 'allow') return undefined
      if (verdict.kind === 'unavailable') {
        if (verdict.open) return undefined
        const { vary: _vary, ...headers } = unavailableAnswer.headers
        return { status: 429, headers: { ...headers, 'ratelimit-policy': policyValue }, body: unavailableAnswer.body }
      }
      denied('client', route, deniedKey)
      return {
        status: 429,
        headers: deniedHeaders(true, policy, policyValue, verdict.decision),
        body: DENIED_CURRENT.body,
      }
    }
  }

  return {
    hookFor,
    bodyHookFor,
    passwordSignIn,
    earlyDeciderFor,
    rawDeciderFor,
    counters,
    store,
    async ready(timeoutMs = 2000) {
      const ok = store.ready ? await store.ready(timeoutMs) : true
      if (!ok)
        logger.warn(
          { failurePolicy: config.onRedisError },
          'rate-limit store not reachable yet; the failure policy applies until it is',
        )
      return ok
    },
    close: () => store.close(),
  }
}

/** The path the request came in on (the route under its prefix), the device cookie's scope. */
function cookiePath(request: FastifyRequest): string {
  const url = request.raw.url ?? '/'
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/** The shared budget is short: after this message, less than half of its burst is left. */
function contended(decision: Decision, policy: RateLimitPolicy): boolean {
  return decision.remaining * 2 < policy.burst
}

function createStore(config: RateLimitConfig, onConnectionError: (err: Error) => void): RateLimitStore {
  if (config.redis) return new RedisStore(config.redis, { onConnectionError })
  return new MemoryStore({ maxKeys: config.memoryMaxKeys })
}
