import { Type, type TSchema } from 'typebox'
import { ErrorSchema } from '../errors.ts'
import { UserObject, WeakPassword } from './types/user.ts'

/** A session answer in cookie mode: the session answer with stand-ins for its tokens. */
export const CookieSessionResponse = Type.Object(
  {
    access_token: Type.String({
      description:
        "A stand-in for the access token: JWT-shaped (the real token's claims and `exp`), signed by authgate, taken only with the session cookie on this origin",
      examples: ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImF1dGhnYXRlLXN0YW5kLWluOmsxIn0.eyJzdWIiOiJ1In0.c2ln'],
    }),
    refresh_token: Type.String({
      description: 'A stand-in for the refresh token (`agr.…`): refreshes the session only with its cookie',
      examples: ['agr.k1.Zm9v'],
    }),
    token_type: Type.String({ description: 'Always `bearer`', examples: ['bearer'] }),
    expires_in: Type.Integer({ description: 'Lifetime of the access token in seconds', examples: [3600] }),
    expires_at: Type.Integer({ description: 'Expiry of the access token, Unix seconds', examples: [1795000000] }),
    user: UserObject,
    weak_password: Type.Optional(
      Type.Union([Type.Object(WeakPassword.properties), Type.Null()], {
        description: 'Present when the password no longer satisfies the password rules (`null` when it does)',
        examples: [null],
      }),
    ),
  },
  {
    title: 'CookieSessionResponse',
    description:
      'A session answer in cookie session mode: authgate keeps the access and refresh tokens (and any provider tokens), sets the HttpOnly session cookie, and answers stand-ins that work only with that cookie on this origin.',
  },
)

/** `GET /session`'s answer. */
export const SessionStatusResponse = Type.Object(
  {
    user: UserObject,
    expires_at: Type.Integer({
      description:
        'When the session ends unless it is used again (idle timeout) or at the latest (lifetime), Unix seconds',
      examples: [1795000000],
    }),
  },
  { title: 'SessionStatusResponse', description: 'Who is signed in with the session cookie' },
)

/** The sentence session routes get in their description when cookie sessions are on. */
export const COOKIE_MODE_NOTE =
  '**Cookie sessions** (turned on here; see docs/sessions.md): when the request is in cookie mode (always, or with `X-Authgate-Session: cookie`), a session answer is stored by authgate and answered with the HttpOnly session cookie; the JSON keeps the user and expiry, carries stand-ins for `access_token` and `refresh_token` (worthless without the cookie, so supabase-js works unchanged) and drops `provider_token` and `provider_refresh_token`. A `refresh_token` grant with the refresh stand-in is answered by authgate, which refreshes the tokens it holds.'

/** The same for a route that redirects with the session in the fragment (`GET /verify`). */
export const COOKIE_MODE_REDIRECT_NOTE =
  '**Cookie sessions** (turned on here; see docs/sessions.md): in `on` mode a redirect carrying a session in its fragment is stored by authgate and answered with the HttpOnly session cookie; the `Location` fragment carries stand-ins for `access_token` and `refresh_token` and drops `provider_token` and `provider_refresh_token`.'

/** The success schema of a session route in cookie mode: its own, or the tokenless answer. */
export const withCookieAnswer = (schema: TSchema | undefined): TSchema =>
  schema === undefined ? CookieSessionResponse : Type.Union([schema, CookieSessionResponse])

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })

export function sessionRouteSchema(): Record<string, unknown> {
  return {
    tags: ['Auth'],
    summary: 'The signed-in user of the session cookie',
    description:
      'Cookie sessions (docs/sessions.md): the user of the session the HttpOnly cookie names, and when it ends. A page asks this to know who is signed in; no token is ever answered.\n\n**Error answers**\n\n| Status | Error codes |\n| --- | --- |\n| 401 | `no_session` |\n| 502 | `backend_unreachable` |\n| 503 | `session_store_unavailable` |\n| 504 | `request_timeout` |\n\nA session not confirmed by Supabase Auth for longer than AUTHGATE_SESSION_REVALIDATE is confirmed first (`GET /user`), and refreshed when its access token expires soon: a session signed out elsewhere answers 401 here.',
    security: [],
    response: {
      200: { description: 'The signed-in user and when the session ends', ...json(SessionStatusResponse) },
      401: { description: 'No session cookie, or its session has ended (`no_session`)', ...json(ErrorSchema) },
      502: {
        description: 'Supabase Auth could not be reached to refresh or confirm the session (`backend_unreachable`)',
        ...json(ErrorSchema),
      },
      503: {
        description: 'The session store could not be reached (`session_store_unavailable`)',
        ...json(ErrorSchema),
      },
      504: {
        description: 'Supabase Auth did not answer in time (`request_timeout`)',
        ...json(ErrorSchema),
      },
    },
    'x-error-codes': {
      '401': ['no_session'],
      '502': ['backend_unreachable'],
      '503': ['session_store_unavailable'],
      '504': ['request_timeout'],
    },
  }
}
