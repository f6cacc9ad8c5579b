/**
 * The property the Go oracle checks: on a request authgate does not refuse, what authgate
 * validates, limits, counts or forwards is what Supabase Auth's Go reads. Every comparison is of a
 * decision authgate's own modules make (the query it reads, the body it validates, the account it
 * limits, the channel whose budget it spends, the grant type, the Basic credentials it forwards)
 * against the oracle's reading of the same bytes.
 */
import type { ValidateFunction } from 'ajv'
import { readBody, mediaKind } from '../../src/auth/body.ts'
import { decodedBasicCredentials } from '../../src/auth/client-credentials.ts'
import { backendQuery } from '../../src/core/go-values.ts'
import { routeSchema } from '../../src/auth/route-docs.ts'
import { routeName, type AuthRoute } from '../../src/auth/routes/index.ts'
import { limitedAccount, messageChannel } from '../../src/ratelimit/account-key.ts'
import { bodyAjv } from '../../src/validation.ts'
import type { GoOracle, GoReading, RawRequest } from './go-oracle.ts'

export interface Difference {
  /** What authgate decided that Go reads otherwise: `query grant_type`, `body/email`, `account`, … */
  what: string
  authgate: unknown
  go: unknown
}

/** How many requests authgate refused, and how many it read and were compared (for the run's line). */
export const tally = { refused: 0, compared: 0 }

const validators = new Map<AuthRoute, ValidateFunction>()
function validator(route: AuthRoute): ValidateFunction {
  let found = validators.get(route)
  if (found === undefined) {
    const body = (routeSchema(route, false, false) as { body: object }).body
    validators.set(route, (found = bodyAjv.compile(body)))
  }
  return found
}

const isZero = (v: unknown) =>
  v === undefined || v === null || v === '' || v === false || (Array.isArray(v) && v.length === 0)

/** Equal as JSON values (numbers by value, objects by their keys in any order, null properties as absent ones). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a))
    return a.length === (b as unknown[]).length && a.every((x, i) => sameValue(x, (b as unknown[])[i]))
  // A null property is an absent one: authgate judges bodies without them (src/auth/types/nullable.ts).
  // Go keeps a null in a map of anything as nil, where authgate decides nothing (any value passes).
  const present = (o: object) => Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== null)
  const ka = present(a)
  const kb = present(b)
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameValue((a as any)[k], (b as any)[k]))
}

/** Fields Go holds raw for a later reader (the CAPTCHA check, the WebAuthn library): not compared as values. */
const RAW = new Set(['gotrue_meta_security', 'credential'])

/** Where authgate's reading of `request` on `route` differs from Go's `reading` of it; empty when none. */
export async function differences(
  oracle: GoOracle,
  route: AuthRoute,
  request: RawRequest,
  reading: GoReading,
): Promise<Difference[]> {
  const out: Difference[] = []
  if (reading.request_error !== undefined) return out // Go's server answers 400 before Supabase Auth reads anything
  // The query: authgate reads it once for every decision (the grant type, the PKCE guard, the checks).
  const query = { ...backendQuery(request.target) }
  // Go's names that are not UTF-8 are left out of its answer, and authgate reads their bad bytes as
  // U+FFFD: those names are compared to nothing (no field is named so).
  const named = Object.fromEntries(Object.entries(query).filter(([k]) => !k.includes('\uFFFD')))
  const goNamed = Object.fromEntries(Object.entries(reading.query).filter(([k]) => !k.includes('\uFFFD')))
  if (!sameValue(named, goNamed)) out.push({ what: 'query', authgate: named, go: goNamed })

  const header = (name: string) => request.headers.find(([k]) => k.toLowerCase() === name)?.[1]
  const contentType = header('content-type')
  const read = readBody(route, request.body, contentType, query)
  if (!('body' in read) || !validator(route)(read.body)) {
    tally.refused++
    return out
  }
  tally.compared++
  const body = read.body as Record<string, unknown>

  const kind = mediaKind(contentType)
  const goForm = route.form === true && reading.media_type === 'application/x-www-form-urlencoded'
  if (request.body.length > 0 && (kind === 'form') !== goForm)
    out.push({ what: 'body media type', authgate: kind, go: reading.media_type })

  // What Go reads into each field of the route's struct (a form: FormValue, which falls back on the query).
  let goFields: Record<string, unknown> | null
  if (goForm) goFields = reading.form
  else if (request.body.length === 0 || reading.no_struct === true) goFields = {}
  else goFields = reading.fields
  if (goFields === null) {
    out.push({ what: 'body', authgate: body, go: reading.decode_error })
    return out
  }
  const byQuery = route.decodedByQuery
  let fields: readonly string[] = Object.keys(goFields)
  if (byQuery !== undefined) {
    const grant = query[byQuery.param]
    if (grant !== reading.query[byQuery.param])
      out.push({ what: `query ${byQuery.param}`, authgate: grant, go: reading.query[byQuery.param] })
    fields = grant !== undefined && Object.hasOwn(byQuery.fields, grant) ? byQuery.fields[grant]! : []
  }
  if (goForm) fields = Object.keys((validator(route).schema as { properties?: object }).properties ?? {})
  for (const field of fields) {
    if (RAW.has(field)) continue
    const mine = body[field]
    const theirs = goFields[field]
    if (mine === undefined ? !isZero(theirs) : !sameValue(mine, theirs))
      out.push({ what: `body/${field}`, authgate: mine, go: theirs })
  }
  const security = body.gotrue_meta_security as { captcha_token?: unknown } | undefined
  if (typeof security?.captcha_token === 'string' && reading.captcha !== null && !goForm)
    if (security.captcha_token !== reading.captcha)
      out.push({ what: 'captcha_token', authgate: security.captcha_token, go: reading.captcha })

  // The decisions made from those values: the account limited and the channel whose budget is spent.
  const goBody = Object.fromEntries(fields.map((f) => [f, goFields[f]]))
  const name = routeName(route)
  const grant = byQuery ? query[byQuery.param] : undefined
  const goGrant = byQuery ? reading.query[byQuery.param] : undefined
  const account = limitedAccount(name, grant, body)
  const goAccount = limitedAccount(name, goGrant, goBody)
  if (route.account !== undefined && account !== goAccount)
    out.push({ what: 'account', authgate: account, go: goAccount })
  if (route.sendsMessages === true && messageChannel(body) !== messageChannel(goBody))
    out.push({ what: 'message channel', authgate: messageChannel(body), go: messageChannel(goBody) })

  // Basic client credentials: the header authgate forwards must read, to Go, as the RFC 6749 reading
  // of the one the client sent.
  const authorization = header('authorization')
  if (route.form === true && authorization !== undefined) {
    const forwarded = decodedBasicCredentials(authorization)
    if (forwarded !== undefined) {
      const again = await oracle.read('', {
        ...request,
        headers: [['Authorization', forwarded]],
        body: Buffer.alloc(0),
      })
      const meant = reading.basic
      const sent = again.basic
      if (
        meant === null ||
        meant.unescape_error !== undefined ||
        sent === null ||
        sent.user !== meant.unescaped_user ||
        sent.pass !== meant.unescaped_pass
      )
        out.push({ what: 'basic credentials', authgate: sent, go: meant })
    }
  }
  return out
}
