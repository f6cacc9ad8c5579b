import type { Budget } from '../ratelimit/abuse-config.ts'
import { devicePolicy } from '../ratelimit/device-cookie.ts'
import type { CoreConfig } from '../config.ts'
import type { BackendResponse, SupabaseAuthClient } from '../core/backend.ts'
import { isRecord } from '../core/is-record.ts'
import { backendUrlQuery } from '../core/go-values.ts'
import type { RateLimitConfig } from '../ratelimit/config.ts'
import type { Finding } from './findings.ts'

export interface DoctorInput {
  config: CoreConfig
  rateLimit: RateLimitConfig | undefined
  /** AUTHGATE_PUBLIC_URL: where clients reach the auth routes (origin and prefix). */
  publicUrl: string | undefined
  /** AUTHGATE_WORKERS (1 when not given). */
  workers?: number | undefined
  /**
   * Supabase Auth's own settings where the operator gave them to the doctor (its environment):
   * `GOTRUE_RATE_LIMIT_EMAIL_SENT`, `GOTRUE_RATE_LIMIT_SMS_SENT`. Supabase Auth publishes neither.
   */
  backendEnv?: Readonly<Record<string, string | undefined>> | undefined
  backend: Pick<SupabaseAuthClient, 'fetch' | 'resolve' | 'url'>
  /** Send the client-IP probe (up to PROBE_MAX requests to POST /otp, from made-up addresses). */
  probe: boolean
  /** Milliseconds since the epoch (tests pin it). */
  now?: () => number
}

/** The most requests the client-IP probe sends from one made-up address. */
export const PROBE_MAX = 64

interface Answer {
  status: number
  body: unknown
  headers: BackendResponse['headers']
}

async function get(input: DoctorInput, path: string, init: { headers?: Record<string, string> } = {}): Promise<Answer> {
  const response = await input.backend.fetch(input.backend.resolve(path), {
    ...init,
    signal: AbortSignal.timeout(input.config.backendTimeoutMs),
  })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body, headers: response.headers }
}

/** Why a request failed: undici's `fetch failed` carries the reason (ECONNREFUSED, a timeout) in its cause. */
function reason(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause
  if (cause instanceof Error) return cause.message
  return err instanceof Error ? err.message : String(err)
}

/** `https://<ref>.supabase.co/...`: the hosted platform, where the API gateway wants an `apikey`. */
export function isHostedBackend(url: URL): boolean {
  return /\.supabase\.(co|in|red)$/i.test(url.hostname)
}

/** A key the hosted platform treats as secret: `sb_secret_…`, or a legacy JWT with role service_role. */
export function isSecretKey(key: string | undefined): boolean {
  if (key === undefined) return false
  if (key.startsWith('sb_secret_')) return true
  const payload = key.split('.')[1]
  if (payload === undefined) return false
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    return isRecord(claims) && claims.role === 'service_role'
  } catch {
    return false
  }
}

/**
 * Every check, in order; never throws (a failed request is a finding). The start-up warnings are
 * the same checks without the probe.
 */
export async function runChecks(input: DoctorInput): Promise<Finding[]> {
  const findings: Finding[] = []
  const add = (f: Finding) => findings.push(f)
  const backendUrl = input.backend.url.href.replace(/\/$/, '')

  // 1. Reachable, and its version.
  let health: Answer
  try {
    health = await get(input, '/health')
  } catch (err) {
    add({
      check: 'backend',
      status: 'error',
      message: `Supabase Auth at ${backendUrl} cannot be reached: ${reason(err)}`,
      fix: 'AUTHGATE_BACKEND_URL',
    })
    apikeyChecks(input, add, undefined)
    corsCheck(input, add)
    return findings
  }
  if (health.status === 401 || health.status === 403) {
    add({
      check: 'backend',
      status: 'error',
      message: `${backendUrl}/health answers ${health.status}: the API gateway wants a key`,
      fix: 'AUTHGATE_BACKEND_APIKEY',
    })
  } else if (health.status !== 200 || !isRecord(health.body)) {
    add({
      check: 'backend',
      status: 'error',
      message: `${backendUrl}/health answers ${health.status}, not Supabase Auth's health document (is the URL right, with its path?)`,
      fix: 'AUTHGATE_BACKEND_URL',
    })
  } else {
    const name = typeof health.body.name === 'string' ? health.body.name : 'Supabase Auth'
    const version = typeof health.body.version === 'string' ? health.body.version : 'unknown version'
    add({ check: 'backend', status: 'ok', message: `${name} ${version} at ${backendUrl}` })
  }

  // 2. Clock skew, from the answer's Date.
  const date = Date.parse(health.headers.get('date') ?? '')
  if (Number.isFinite(date)) {
    const skew = Math.round(((input.now ?? Date.now)() - date) / 1000)
    const abs = Math.abs(skew)
    add({
      check: 'clock',
      status: abs >= 60 ? 'error' : abs >= 5 ? 'warn' : 'ok',
      message:
        abs < 5
          ? `clocks agree (within the Date header's one-second resolution, ${skew} s)`
          : `authgate's clock is ${abs} s ${skew > 0 ? 'ahead of' : 'behind'} Supabase Auth's: tokens may read as not yet valid or expired`,
      ...(abs >= 5 ? { fix: 'run NTP (chrony, systemd-timesyncd) on both hosts' } : {}),
    })
  } else {
    add({ check: 'clock', status: 'warn', message: 'Supabase Auth sent no Date header: the clock skew is unknown' })
  }

  // 3. Settings and the key set.
  let settings: Record<string, unknown> | undefined
  try {
    const answer = await get(input, '/settings')
    if (answer.status === 200 && isRecord(answer.body)) {
      settings = answer.body
      const external = isRecord(settings.external) ? settings.external : {}
      const enabled = Object.entries(external)
        .filter(([, on]) => on === true)
        .map(([name]) => name)
      add({
        check: 'settings',
        status: 'ok',
        message: `/settings readable: sign-up ${settings.disable_signup === true ? 'closed' : 'open'}, e-mail sign-ups confirmed ${settings.mailer_autoconfirm === true ? 'automatically' : 'by e-mail'}, providers: ${enabled.join(', ') || 'none'}`,
      })
    } else {
      add({
        check: 'settings',
        status: 'error',
        message: `/settings answers ${answer.status}`,
        fix: 'AUTHGATE_BACKEND_URL, AUTHGATE_BACKEND_APIKEY',
      })
    }
  } catch (err) {
    add({ check: 'settings', status: 'error', message: `/settings failed: ${reason(err)}` })
  }
  try {
    const answer = await get(input, '/.well-known/jwks.json')
    const keys = isRecord(answer.body) && Array.isArray(answer.body.keys) ? (answer.body.keys as unknown[]) : undefined
    if (answer.status !== 200 || keys === undefined)
      add({
        check: 'keys',
        status: 'error',
        message: `/.well-known/jwks.json answers ${answer.status} without a key set`,
      })
    else if (keys.length === 0)
      add({
        check: 'keys',
        status: 'warn',
        message: 'the key set is empty: tokens are HS256, verifiable only with the shared JWT secret',
        fix: 'GOTRUE_JWT_KEYS (asymmetric signing keys)',
      })
    else {
      const algs = [...new Set(keys.map((k) => (isRecord(k) && typeof k.alg === 'string' ? k.alg : '?')))]
      add({ check: 'keys', status: 'ok', message: `key set readable: ${keys.length} key(s), ${algs.join(', ')}` })
    }
  } catch (err) {
    add({ check: 'keys', status: 'error', message: `/.well-known/jwks.json failed: ${reason(err)}` })
  }

  // 4. Issuer and links against the public URL.
  await issuerChecks(input, add, settings)

  // 5. Client IP as Supabase Auth sees it, and its limits against authgate's.
  let probedLimit: number | undefined
  if (input.probe) probedLimit = await clientIpProbe(input, add)
  else
    add({
      check: 'client-ip',
      status: 'info',
      message: `authgate sends the client IP in ${headerLabel(input.config.clientIpHeader)}; not probed (run \`authgate doctor\` to see whether Supabase Auth limits by it)`,
      fix: `GOTRUE_RATE_LIMIT_HEADER=${headerLabel(input.config.clientIpHeader)}`,
    })
  limitChecks(input, add, settings, probedLimit)
  corsCheck(input, add)
  apikeyChecks(input, add, health.status)
  return findings
}

const headerLabel = (name: string) =>
  name
    .split('-')
    .map((p) => (p.length <= 2 ? p.toUpperCase() : p[0]!.toUpperCase() + p.slice(1)))
    .join('-')

async function issuerChecks(
  input: DoctorInput,
  add: (f: Finding) => void,
  settings: Record<string, unknown> | undefined,
) {
  const publicUrl = input.publicUrl?.replace(/\/+$/, '')
  if (publicUrl === undefined) {
    add({
      check: 'issuer',
      status: 'warn',
      message: "AUTHGATE_PUBLIC_URL is not set: the issuer and links cannot be checked against authgate's public URL",
      fix: 'AUTHGATE_PUBLIC_URL (e.g. https://api.example.com/auth)',
    })
    return
  }
  try {
    const answer = await get(input, '/.well-known/openid-configuration')
    const issuer = isRecord(answer.body) && typeof answer.body.issuer === 'string' ? answer.body.issuer : undefined
    if (issuer === undefined)
      add({
        check: 'issuer',
        status: 'warn',
        message: `no discovery document (/.well-known/openid-configuration answers ${answer.status})`,
      })
    else if (issuer.replace(/\/+$/, '') !== publicUrl)
      add({
        check: 'issuer',
        status: 'error',
        message: `the issuer (discovery \`issuer\` and every token's \`iss\`) is ${JSON.stringify(issuer)}, not authgate's public URL ${publicUrl}: clients that check the issuer refuse the tokens`,
        fix: `GOTRUE_JWT_ISSUER=${publicUrl}`,
      })
    else add({ check: 'issuer', status: 'ok', message: `issuer (discovery and tokens' \`iss\`) is ${publicUrl}` })
  } catch (err) {
    add({ check: 'issuer', status: 'error', message: `discovery document failed: ${reason(err)}` })
  }
  // OAuth links: the callback a provider sends users back to, as GET /authorize builds it.
  const external = isRecord(settings?.external) ? settings.external : {}
  const provider = Object.entries(external).find(
    ([name, on]) => on === true && !['email', 'phone', 'anonymous_users', 'saml'].includes(name),
  )?.[0]
  if (provider === undefined) {
    add({
      check: 'links',
      status: 'info',
      message: `no OAuth provider enabled to check the callback link; e-mail links are built from API_EXTERNAL_URL, which Supabase Auth does not publish: it must be ${publicUrl}`,
      fix: `API_EXTERNAL_URL=${publicUrl}`,
    })
    return
  }
  try {
    const response = await input.backend.fetch(
      input.backend.resolve(`/authorize?provider=${encodeURIComponent(provider)}`),
      {
        signal: AbortSignal.timeout(input.config.backendTimeoutMs),
      },
    )
    await response.body?.cancel()
    const location = response.headers.get('location') ?? ''
    // Read as Supabase Auth reads its own query; no absolute Location, no redirect_uri to check.
    const redirect = URL.canParse(location) ? (backendUrlQuery(location).redirect_uri ?? null) : null
    const expected = `${publicUrl}/callback`
    if (redirect === null)
      add({
        check: 'links',
        status: 'warn',
        message: `GET /authorize?provider=${provider} answered ${response.status} without a redirect_uri to check`,
      })
    else if (redirect !== expected)
      add({
        check: 'links',
        status: 'error',
        message: `${provider} sends users back to ${redirect}, not through authgate (${expected}); e-mail links, built from API_EXTERNAL_URL, are likely wrong the same way`,
        fix: `API_EXTERNAL_URL=${publicUrl} and GOTRUE_EXTERNAL_${provider.toUpperCase()}_REDIRECT_URI=${expected}`,
      })
    else
      add({
        check: 'links',
        status: 'ok',
        message: `${provider} callback is ${expected}; e-mail links are built from API_EXTERNAL_URL, which must be ${publicUrl} too`,
      })
  } catch (err) {
    add({ check: 'links', status: 'warn', message: `GET /authorize failed: ${reason(err)}` })
  }
}

/** A made-up client address in 198.18.0.0/15 (RFC 2544, benchmarking): no real client's bucket is touched. */
function probeAddress(): string {
  const n = Math.floor(Math.random() * 2 ** 17)
  return `198.${18 + (n >> 16)}.${(n >> 8) & 0xff}.${n & 0xff}`
}

/**
 * Sends POST /otp with an empty body (refused as invalid after Supabase Auth's limiter counted it;
 * no message is sent) from one made-up address until Supabase Auth answers 429, then once from
 * another: a 429 that the second address does not get shows it limits per client IP by the header
 * authgate sends.
 */
async function clientIpProbe(input: DoctorInput, add: (f: Finding) => void): Promise<number | undefined> {
  const header = input.config.clientIpHeader
  const label = headerLabel(header)
  const send = async (ip: string) => {
    const response = await input.backend.fetch(input.backend.resolve('/otp'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // As a forwarded request from that address carries it (the configured header included).
      identity: { clientIp: ip },
      body: '{}',
      signal: AbortSignal.timeout(input.config.backendTimeoutMs),
    })
    await response.body?.cancel()
    return response.status
  }
  try {
    const first = probeAddress()
    let refusedAt: number | undefined
    for (let i = 1; i <= PROBE_MAX; i++) {
      if ((await send(first)) === 429) {
        refusedAt = i
        break
      }
    }
    if (refusedAt === undefined) {
      add({
        check: 'client-ip',
        status: 'warn',
        message: `Supabase Auth let ${PROBE_MAX} requests from one address through on POST /otp: it does not limit per client IP by ${label} (GOTRUE_RATE_LIMIT_HEADER unset or naming another header), or its limit is above ${PROBE_MAX}`,
        fix: `GOTRUE_RATE_LIMIT_HEADER=${label}${header === 'sb-forwarded-for' ? ' (hosted: a secret key in AUTHGATE_BACKEND_APIKEY)' : ''}`,
      })
      return undefined
    }
    const second = await send(probeAddress())
    if (second === 429) {
      add({
        check: 'client-ip',
        status: 'error',
        message: `Supabase Auth refused a second address as soon as the first reached its limit: it counts every client through authgate as one`,
        fix: `GOTRUE_RATE_LIMIT_HEADER=${label}`,
      })
      return undefined
    }
    add({
      check: 'client-ip',
      status: 'ok',
      message: `Supabase Auth limits per client IP from ${label}: one address was refused after ${refusedAt - 1} requests on POST /otp, another let through`,
    })
    return refusedAt - 1
  } catch (err) {
    add({ check: 'client-ip', status: 'warn', message: `the client-IP probe failed: ${reason(err)}` })
    return undefined
  }
}

function limitChecks(
  input: DoctorInput,
  add: (f: Finding) => void,
  settings: Record<string, unknown> | undefined,
  probedLimit: number | undefined,
) {
  const rl = input.rateLimit
  if (rl === undefined) {
    add({ check: 'limits', status: 'warn', message: 'rate limiting is off', fix: 'AUTHGATE_RATE_LIMITED_ROUTES' })
    return
  }
  const otp = rl.routes.get('POST /otp')
  if (probedLimit !== undefined && otp !== undefined && otp.burst > probedLimit)
    add({
      check: 'limits',
      status: 'warn',
      message: `authgate lets ${otp.burst} requests in a row through on POST /otp, Supabase Auth only ${probedLimit}: clients meet Supabase Auth's 429 first`,
      fix: `AUTHGATE_RATE_LIMIT_ROUTES="POST /otp=${probedLimit}/5m" or GOTRUE_RATE_LIMIT_OTP`,
    })
  else if (otp !== undefined)
    add({
      check: 'limits',
      status: 'ok',
      message: `per client IP: ${otp.limit}/${windowText(otp.windowMs)} on POST /otp${probedLimit !== undefined ? ` (Supabase Auth: ${probedLimit} in a row)` : ''}`,
    })
  const b = rl.budgets
  for (const [kind, budget, setting] of [
    ['e-mail', b?.email, 'GOTRUE_RATE_LIMIT_EMAIL_SENT'],
    ['SMS', b?.sms, 'GOTRUE_RATE_LIMIT_SMS_SENT'],
  ] as const) {
    if (budget === undefined) {
      add({
        check: 'budgets',
        status: 'warn',
        message: `no ${kind} budget: one client can spend Supabase Auth's whole ${kind} budget`,
        fix: `AUTHGATE_${kind === 'SMS' ? 'SMS' : 'EMAIL'}_BUDGET (${setting} of Supabase Auth)`,
      })
      continue
    }
    budgetFinding(kind, budget, setting, input.backendEnv?.[setting], add)
  }
  if (settings?.mailer_autoconfirm === true)
    add({
      check: 'budgets',
      status: 'info',
      message:
        "Supabase Auth confirms sign-ups automatically, and then skips its own e-mail budget (recovery and OTP mail still go out): authgate's budget is the only one",
    })
  const accounts = rl.accounts
  if (accounts === undefined || accounts.routes.size === 0)
    add({
      check: 'accounts',
      status: 'warn',
      message: 'no per-account limits: a client with many addresses can guess one password without limit',
      fix: 'AUTHGATE_ACCOUNT_RATE_LIMIT',
    })
  else if (!accounts.secretConfigured && (rl.redis !== undefined || (input.workers ?? 1) > 1))
    add({
      check: 'accounts',
      status: 'warn',
      message:
        rl.redis !== undefined
          ? 'per-account keys use a random secret per process: replicas sharing Redis count each account apart'
          : `per-account keys use a random secret: the ${input.workers} workers share the primary's, but a restart forgets every account's count and another replica would count apart`,
      fix: 'AUTHGATE_ACCOUNT_KEY_SECRET (the same on every replica)',
    })
  else {
    const token = accounts.routes.get('POST /token')
    add({
      check: 'accounts',
      status: 'ok',
      message: `per account: ${[...accounts.routes]
        .map(([r, p]) => `${r} ${p.limit}/${windowText(p.windowMs)}${r === 'POST /token' ? ' failed' : ''}`)
        .join(', ')}${
        token === undefined
          ? ' (password sign-in not limited per account)'
          : accounts.deviceCookie
            ? `; a browser with the account's device cookie ${devicePolicy(token).limit}/${windowText(token.windowMs)} of its own`
            : '; no device cookies (AUTHGATE_ACCOUNT_DEVICE_COOKIE=off): strangers can lock an account out'
      }`,
    })
  }
}

/**
 * Supabase Auth's budget per hour from its setting as written there: a count (per hour), or
 * `COUNT/DURATION` in Go's duration syntax; undefined when it is not a per-hour count authgate's
 * budget can be compared with.
 */
export function backendPerHour(raw: string): number | undefined {
  const value = raw.trim()
  if (/^\d+(\.\d+)?$/.test(value)) return Math.floor(Number(value))
  const m = /^(\d+)\/(1h|60m|3600s|1h0m0s)$/.exec(value)
  return m ? Number(m[1]) : undefined
}

/** The budget against Supabase Auth's own, when the operator gave it: measured, not assumed. */
function budgetFinding(
  kind: 'e-mail' | 'SMS',
  budget: Budget,
  setting: string,
  given: string | undefined,
  add: (f: Finding) => void,
) {
  const variable = kind === 'SMS' ? 'AUTHGATE_SMS_BUDGET' : 'AUTHGATE_EMAIL_BUDGET'
  const ours = budget.backendPerHour
  const what = `authgate lets at most ${ours} an hour through (${budget.policy.burst} at once; one client ${budget.clientPolicy.burst} at once while fewer than half are left)`
  if (given === undefined || given.trim() === '') {
    add({
      check: 'budgets',
      status: 'info',
      message: `${kind}: ${variable}=${ours} assumes Supabase Auth's ${setting}=${ours}: not verified (Supabase Auth does not publish it, and the doctor sends no ${kind === 'SMS' ? 'SMS' : 'mail'} to measure it); ${what}`,
      fix: `${setting} in the doctor's environment, as Supabase Auth has it`,
    })
    return
  }
  const theirs = backendPerHour(given)
  if (theirs === undefined)
    add({
      check: 'budgets',
      status: 'warn',
      message: `${kind}: Supabase Auth's ${setting}=${given} is not a count per hour, which ${variable} is: the two cannot be compared`,
      fix: `${setting}=<count per hour> and ${variable} the same`,
    })
  else if (theirs === ours)
    add({
      check: 'budgets',
      status: 'ok',
      message: `${kind}: ${variable}=${ours} matches ${setting}=${given} (given to the doctor); ${what}`,
    })
  else if (ours > theirs)
    add({
      check: 'budgets',
      status: 'warn',
      message: `${kind}: ${variable}=${ours} but Supabase Auth's ${setting}=${given}: authgate lets more through than Supabase Auth sends, so everyone meets its over_${kind === 'SMS' ? 'sms' : 'email'}_send_rate_limit before authgate's budget answers`,
      fix: `${variable}=${theirs}`,
    })
  else
    add({
      check: 'budgets',
      status: 'warn',
      message: `${kind}: ${variable}=${ours} but Supabase Auth's ${setting}=${given}: authgate refuses messages Supabase Auth would send`,
      fix: `${variable}=${theirs}`,
    })
}

/** `900000` → `15m`, `3600000` → `1h`: a window as a rate is written. */
function windowText(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`
  return `${ms / 1000}s`
}

function corsCheck(input: DoctorInput, add: (f: Finding) => void) {
  const origins = input.config.corsOrigins
  if (origins.length === 0)
    add({
      check: 'cors',
      status: 'info',
      message: 'no CORS: browsers on other origins cannot call the auth routes (same-origin apps and servers can)',
      fix: 'AUTHGATE_CORS_ORIGINS',
    })
  else if (origins[0] === '*')
    add({
      check: 'cors',
      status: 'warn',
      message: 'any origin may call the auth routes (without credentials): list your apps instead',
      fix: 'AUTHGATE_CORS_ORIGINS=https://app.example.com',
    })
  else add({ check: 'cors', status: 'ok', message: `browser origins allowed: ${origins.join(', ')}` })
}

function apikeyChecks(input: DoctorInput, add: (f: Finding) => void, healthStatus: number | undefined) {
  const hosted = isHostedBackend(input.backend.url)
  const key = input.config.backendApiKey
  const sbff = input.config.clientIpHeader === 'sb-forwarded-for'
  if (hosted && key === undefined)
    add({
      check: 'apikey',
      status: 'error',
      message: 'the backend is hosted Supabase, whose API gateway refuses requests without an apikey',
      fix: 'AUTHGATE_BACKEND_APIKEY',
    })
  else if (sbff && hosted && !isSecretKey(key))
    add({
      check: 'apikey',
      status: 'error',
      message:
        'hosted Supabase believes Sb-Forwarded-For only from requests with a secret key; with this key it sees authgate as the only client',
      fix: 'AUTHGATE_BACKEND_APIKEY=sb_secret_…',
    })
  else if (hosted && !sbff)
    add({
      check: 'apikey',
      status: 'info',
      message:
        "hosted Supabase sees authgate as the only client for its per-IP limits (authgate's own limits are per client); Sb-Forwarded-For would need a secret key on every forwarded request (docs/rate-limiting.md)",
      fix: 'AUTHGATE_CLIENT_IP_HEADER=Sb-Forwarded-For with a secret key in AUTHGATE_BACKEND_APIKEY, if you accept that',
    })
  else if (hosted)
    add({
      check: 'apikey',
      status: 'ok',
      message: 'hosted Supabase: a secret key is sent, and the client IP in Sb-Forwarded-For',
    })
  else if (sbff)
    add({
      check: 'apikey',
      status: 'info',
      message: 'self-hosted with Sb-Forwarded-For: Supabase Auth reads it only when told to',
      fix: 'GOTRUE_SECURITY_SB_FORWARDED_FOR_ENABLED=true',
    })
  else if (healthStatus !== 401 && healthStatus !== 403)
    add({
      check: 'apikey',
      status: 'ok',
      message: key === undefined ? 'no apikey needed (self-hosted)' : 'an apikey is sent on every backend request',
    })
}
