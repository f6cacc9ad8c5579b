import { Type } from 'typebox'
import { pathSegment, str } from '../types/common.ts'
import { UrlResponse } from '../types/sso.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { ok, redirect, redirectTo } from './shared.ts'

/** Manual linking and unlinking of the signed-in user's external identities. */
const IDENTITIES: GroupDefaults = { kind: 'typed', tag: 'Auth', group: 'identities', bearer: true, rateLimited: false }

export const identityRoutes = withDefaults(IDENTITIES, [
  {
    method: 'GET',
    path: '/user/identities/authorize',
    kind: 'relay',
    summary: 'Link an external identity',
    description:
      'Starts an external OAuth sign-in whose identity is linked to the signed-in user (Supabase Auth needs manual linking enabled, else 404 `manual_linking_disabled`). Redirects to the provider, or answers `{url}` with `skip_http_redirect=true`, as supabase-js asks. Relayed byte for byte.',
    query: Type.Object({
      provider: str('External provider, e.g. `github`', 'github'),
      redirect_to: Type.Optional(redirectTo),
      scopes: Type.Optional(str('Extra provider scopes', 'repo gist')),
      skip_http_redirect: Type.Optional(str('`true`: answer `{url}` with 200 instead of a 302', 'true')),
      code_challenge: Type.Optional(str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')),
      code_challenge_method: Type.Optional(str('PKCE method', 's256')),
    }),
    responses: {
      200: { description: 'The provider URL (`skip_http_redirect=true`)', schema: UrlResponse },
      302: redirect('To the provider'),
    },
    errors: { 404: ['manual_linking_disabled'] },
    // Starts linking whatever identity the browser holds at the provider to the signed-in user, and
    // ends in a new session of the user: with the cookie, one that can only become a cookie.
    cookieGuard: 'pkce',
  },
  {
    method: 'DELETE',
    path: '/user/identities/{identity_id}',
    summary: 'Unlink an identity',
    description:
      "Removes one of the signed-in user's identities; the last one cannot be removed. Needs manual linking enabled on Supabase Auth. The body is not read.",
    params: Type.Object({
      identity_id: pathSegment('Identity id (`identity_id` of the identity)', '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', {
        format: 'uuid',
      }),
    }),
    responses: ok('Unlinked (`{}`)', Type.Object({}, { title: 'EmptyObject', description: 'An empty object' })),
    errors: {
      403: ['unexpected_audience'],
      404: ['manual_linking_disabled', 'validation_failed'],
      422: ['identity_not_found', 'single_identity_not_deletable', 'email_conflict_identity_not_deletable'],
    },
  },
])
