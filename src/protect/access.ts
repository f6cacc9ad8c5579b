import type { RouteAccess } from '../openapi/types.ts'
import { canForbid, type RouteAuth } from './requirement.ts'

/** The `WWW-Authenticate` header of a protected route's 401 and 403. */
const CHALLENGE = {
  'WWW-Authenticate': {
    description:
      'RFC 6750 bearer challenge: `error` and `error_description` when a token was refused, and `resource_metadata` (RFC 9728) naming where to get one.',
    schema: { type: 'string' },
    example: 'Bearer error="invalid_token", error_description="the access token has expired"',
  },
} as const

/**
 * What a route's token check means for its document: optional auth also accepts no credentials,
 * 401 always, and 403 only where a valid token can still be refused (a role, an AAL above aal1, a
 * scope). The route documents what it checks, whatever its tags say.
 */
export function documentedAccess(auth: RouteAuth): RouteAccess {
  const errors: RouteAccess['errors'] = { '401': { headers: { ...CHALLENGE } } }
  if (canForbid(auth)) errors['403'] = { headers: { ...CHALLENGE } }
  return {
    security: auth.mode === 'optional' ? [{}, { bearerAuth: [] }] : [{ bearerAuth: [] }],
    errors,
  }
}
