import type { JWTPayload } from 'jose'
import { isRecord } from '../core/is-record.ts'

/** An authentication assurance level, as Supabase Auth writes it in the `aal` claim. */
export type AuthAssuranceLevel = 'aal1' | 'aal2' | 'aal3'

/** One entry of the `amr` claim: how (and when) the session was authenticated. */
export interface AuthMethodReference {
  /** `password`, `otp`, `oauth`, `totp`, `mfa/phone`, `mfa/webauthn`, `anonymous`, `sso/saml`, ... */
  method: string
  /** Unix seconds; 0 when the token carried the method as a bare string. */
  timestamp: number
  provider?: string
}

/**
 * The claims of a verified Supabase Auth access token, as `request.user` carries them. The names
 * are Supabase Auth's own; fields a token may leave out are optional, and anything else the token
 * carries (claims added by a custom access-token hook) is kept in `claims`.
 */
export interface AuthUser {
  /** The user's id (a UUID). */
  sub: string
  /**
   * `authenticated` for signed-in users on Supabase's platform (a self-hosted Supabase Auth writes
   * its GOTRUE_JWT_DEFAULT_GROUP_NAME, empty when unset), `service_role`, or a role set by a hook.
   */
  role: string
  aal: AuthAssuranceLevel | undefined
  amr: AuthMethodReference[]
  session_id: string | undefined
  is_anonymous: boolean
  email: string | undefined
  phone: string | undefined
  app_metadata: Record<string, unknown>
  user_metadata: Record<string, unknown>
  /** Set on tokens issued to a third-party OAuth client of Supabase Auth's OAuth server. */
  client_id: string | undefined
  /** The OAuth scopes granted to that client (space-separated in the token). */
  scopes: string[]
  /** Issued-at and expiry, Unix seconds. */
  iat: number | undefined
  exp: number
  /** The raw access token, for forwarding to Supabase (PostgREST, Storage) on the user's behalf. */
  token: string
  /** Every claim of the token, as verified. */
  claims: JWTPayload & Record<string, unknown>
}

const LEVELS: readonly AuthAssuranceLevel[] = ['aal1', 'aal2', 'aal3']

export function aalRank(level: string | undefined): number {
  return level === undefined ? 0 : LEVELS.indexOf(level as AuthAssuranceLevel) + 1
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

function amrOf(value: unknown): AuthMethodReference[] {
  if (!Array.isArray(value)) return []
  const out: AuthMethodReference[] = []
  for (const item of value) {
    // Supabase Auth writes objects; a custom access-token hook may write plain strings (RFC 8176).
    if (typeof item === 'string') out.push({ method: item, timestamp: 0 })
    else if (isRecord(item) && typeof item.method === 'string') {
      const entry: AuthMethodReference = {
        method: item.method,
        timestamp: typeof item.timestamp === 'number' ? item.timestamp : 0,
      }
      if (typeof item.provider === 'string' && item.provider !== '') entry.provider = item.provider
      out.push(entry)
    }
  }
  return out
}

/**
 * The typed view of a verified payload, or a reason it is not a Supabase Auth access token
 * (no subject, no role, an expiry that is not a number).
 */
export function toAuthUser(payload: JWTPayload, token: string): AuthUser | string {
  const p = payload as JWTPayload & Record<string, unknown>
  const sub = str(p.sub)
  if (sub === undefined) return 'the token has no subject'
  // Empty unless GOTRUE_JWT_DEFAULT_GROUP_NAME is set (it is `authenticated` on Supabase's platform).
  if (typeof p.role !== 'string') return 'the token has no role'
  const role = p.role
  if (typeof p.exp !== 'number') return 'the token has no expiry'
  const aal = str(p.aal)
  if (aal !== undefined && !LEVELS.includes(aal as AuthAssuranceLevel)) return `unknown assurance level ${aal}`
  return {
    sub,
    role,
    aal: aal as AuthAssuranceLevel | undefined,
    amr: amrOf(p.amr),
    session_id: str(p.session_id),
    is_anonymous: p.is_anonymous === true,
    email: str(p.email),
    phone: str(p.phone),
    app_metadata: isRecord(p.app_metadata) ? p.app_metadata : {},
    user_metadata: isRecord(p.user_metadata) ? p.user_metadata : {},
    client_id: str(p.client_id),
    scopes: typeof p.scope === 'string' ? p.scope.split(' ').filter(Boolean) : [],
    iat: typeof p.iat === 'number' ? p.iat : undefined,
    exp: p.exp,
    token,
    claims: p,
  }
}
