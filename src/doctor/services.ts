import { Pool, requestThrough, type SupabaseAuthClient } from '../core/backend.ts'
import { isRecord } from '../core/is-record.ts'
import type { ServicesConfig, ServiceUpstream } from '../services/config.ts'
import type { Finding } from './findings.ts'

/** The claims of a JWT, undefined when it is not one. */
function claimsOf(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } | undefined {
  const [h, p] = token.split('.')
  try {
    const header: unknown = JSON.parse(Buffer.from(h ?? '', 'base64url').toString('utf8'))
    const payload: unknown = JSON.parse(Buffer.from(p ?? '', 'base64url').toString('utf8'))
    return isRecord(header) && isRecord(payload) ? { header, payload } : undefined
  } catch {
    return undefined
  }
}

/** What each service is asked: a path that says whether the key was accepted, where it has one. */
const PROBE: Record<string, { path: string; judgesKey: boolean }> = {
  // PostgREST verifies the bearer before answering its description.
  rest: { path: '/', judgesKey: true },
  // Storage verifies the bearer before listing buckets.
  storage: { path: '/bucket', judgesKey: true },
  functions: { path: '/', judgesKey: false },
  realtime: { path: '/ping', judgesKey: false },
  meta: { path: '/', judgesKey: false },
}

/**
 * `authgate doctor` on the services beside Auth: each upstream reachable, the project's key
 * accepted where the service says so (PostgREST, Storage: the key was signed with the JWT secret
 * they verify with), the configured keys' roles, and whether the services' keys and Supabase Auth's
 * signing keys are of one kind (HS256 keys beside an asymmetric key set: the services need both).
 */
export async function serviceChecks(
  services: ServicesConfig,
  backend: Pick<SupabaseAuthClient, 'fetch' | 'resolve'>,
  timeoutMs: number,
): Promise<Finding[]> {
  const findings: Finding[] = []
  const keys = services.keys
  for (const [name, setting, role] of [
    ['anon', 'AUTHGATE_ANON_KEY', 'anon'],
    ['service', 'AUTHGATE_SERVICE_ROLE_KEY', 'service_role'],
  ] as const) {
    const key = keys?.[name]
    if (key === undefined) continue
    const claims = claimsOf(key)
    if (claims === undefined)
      findings.push({ check: 'service-keys', status: 'error', message: `${setting} is not a JWT`, fix: setting })
    else if (claims.payload.role !== role)
      findings.push({
        check: 'service-keys',
        status: 'error',
        message: `${setting} carries role ${JSON.stringify(claims.payload.role)}, not ${role} (are the two keys swapped?)`,
        fix: setting,
      })
  }
  await signingKeysCheck(services, backend, timeoutMs, findings)

  const key = keys?.service ?? services.defaultKey ?? keys?.anon
  const seen = new Set<string>()
  for (const upstream of services.upstreams) {
    if (upstream.row.exact || seen.has(upstream.label)) continue
    seen.add(upstream.label)
    findings.push(await probe(upstream, key, timeoutMs))
  }
  return findings
}

async function signingKeysCheck(
  services: ServicesConfig,
  backend: Pick<SupabaseAuthClient, 'fetch' | 'resolve'>,
  timeoutMs: number,
  findings: Finding[],
): Promise<void> {
  const legacy = services.keys?.service ?? services.keys?.anon
  const keyAlg = legacy === undefined ? undefined : claimsOf(legacy)?.header.alg
  if (typeof keyAlg !== 'string') return
  let algs: string[]
  try {
    const answer = await backend.fetch(backend.resolve('/.well-known/jwks.json'), {
      signal: AbortSignal.timeout(timeoutMs),
    })
    const body: unknown = JSON.parse(await answer.text())
    const list = isRecord(body) && Array.isArray(body.keys) ? (body.keys as unknown[]) : []
    algs = [...new Set(list.map((k) => (isRecord(k) && typeof k.alg === 'string' ? k.alg : '?')))]
  } catch {
    return // the Auth checks report an unreadable key set
  }
  const asymmetric = algs.filter((a) => a !== 'HS256')
  if (asymmetric.length === 0 || keyAlg !== 'HS256')
    findings.push({
      check: 'signing-keys',
      status: 'ok',
      message: `users' tokens and the project's keys are signed alike (${algs.length > 0 ? algs.join(', ') : 'HS256'} and ${keyAlg})`,
    })
  else
    findings.push({
      check: 'signing-keys',
      status: 'warn',
      message: `Supabase Auth signs users' tokens with ${asymmetric.join(', ')} (its key set) and the project's keys are ${keyAlg}: PostgREST, Storage and Realtime must verify both, or signed-in users are refused`,
      fix: "give each service Supabase Auth's key set besides the JWT secret (PGRST_JWT_SECRET as a JWKS holding both, Storage's and Realtime's JWT_JWKS)",
    })
}

async function probe(upstream: ServiceUpstream, key: string | undefined, timeoutMs: number): Promise<Finding> {
  const check = `service:${upstream.label}`
  const setting = upstream.selfHosted ? upstream.row.setting : 'AUTHGATE_SUPABASE_URL'
  const where = `${upstream.origin}${upstream.basePath}`
  const plan = PROBE[upstream.label] ?? { path: '/', judgesKey: false }
  const headers: Record<string, string> = {}
  if (key !== undefined) {
    headers.apikey = key
    if (upstream.row.bearerFromKey) headers.authorization = `Bearer ${key}`
  }
  if (upstream.host !== undefined) headers.host = upstream.host
  const pool = new Pool(upstream.origin, { connections: 1 })
  try {
    const answer = await requestThrough.call(pool, {
      method: 'GET',
      path: upstream.basePath + plan.path,
      headers,
      signal: AbortSignal.timeout(timeoutMs),
    })
    const text = await answer.body.text()
    const status = answer.statusCode
    if (status >= 500) return { check, status: 'error', message: `${where} answers ${status}`, fix: setting }
    if (!plan.judgesKey)
      return {
        check,
        status: 'ok',
        message: `${where} answers (${status}); it has no route that says whether a key is good`,
      }
    // Storage refuses with HTTP 400 and the status it means in the body.
    let meant = status
    try {
      const body: unknown = JSON.parse(text)
      if (isRecord(body) && typeof body.statusCode === 'string' && status === 400) meant = Number(body.statusCode)
    } catch {
      // not JSON: the status says it
    }
    if (key === undefined)
      return {
        check,
        status: 'warn',
        message: `${where} answers (${status}); no key is configured to check`,
        fix: 'AUTHGATE_SERVICE_ROLE_KEY',
      }
    if (meant === 401 || meant === 403)
      return {
        check,
        status: 'error',
        message: `${where} refuses the project's key (${status}: ${text.slice(0, 120)}): the service verifies with another JWT secret than the one the key was signed with`,
        fix: `${keyName(upstream)}, or the service's JWT secret`,
      }
    return { check, status: 'ok', message: `${where} answers and accepts the project's key (${status})` }
  } catch (err) {
    const cause = (err as { cause?: Error }).cause
    return {
      check,
      status: 'error',
      message: `${where} cannot be reached: ${(cause ?? (err as Error)).message}`,
      fix: setting,
    }
  } finally {
    await pool.close()
  }
}

const keyName = (upstream: ServiceUpstream) =>
  upstream.selfHosted ? 'AUTHGATE_SERVICE_ROLE_KEY' : 'AUTHGATE_BACKEND_APIKEY'
