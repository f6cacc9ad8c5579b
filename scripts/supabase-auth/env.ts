import type { SigningJwk } from './jwt.ts'

/** Phone numbers (E.164 without '+') that get a fixed OTP instead of an SMS. */
export const TEST_PHONE_OTPS: Readonly<Record<string, string>> = {
  '15550000001': '123456',
  '15550000002': '123456',
  '15550000003': '123456',
  '15550000004': '123456',
  '15550000005': '123456',
}

/** Consent page path (under the site URL) that the OAuth 2.1 server redirects to. */
export const OAUTH_CONSENT_PATH = '/oauth/consent'

/**
 * The header authgate sends the client IP in and Supabase Auth limits by (authgate's default,
 * AUTHGATE_CLIENT_IP_HEADER): one name for both sides.
 */
export const CLIENT_IP_HEADER = 'X-Forwarded-For'

/** The port Supabase Auth listens on in development (`npm run dev`, `npm run backend:dev`): its own default. */
export const DEV_SUPABASE_AUTH_PORT = 9999

/** High enough that Supabase Auth's own limiters never interfere with tests of authgate's. */
const UNLIMITED = '100000'

export interface SupabaseAuthSettings {
  /** Port the server listens on (127.0.0.1 only). */
  port: number
  /** Public base URL clients use, authgate's prefix included, e.g. http://localhost:8080/auth. */
  publicUrl: string
  /** GOTRUE_SITE_URL; defaults to the origin of publicUrl. */
  siteUrl?: string
  databaseUrl: string
  jwtSecret: string
  signingJwk: SigningJwk
}

function trimTrailingSlash(value: string): string {
  return value.endsWith('/') ? value.slice(0, -1) : value
}

/**
 * The environment of a Supabase Auth server placed behind authgate.
 * Every variable is spelt out so the process never depends on the caller's GOTRUE_* variables.
 */
export function supabaseAuthEnv(settings: SupabaseAuthSettings): Record<string, string> {
  const publicUrl = trimTrailingSlash(settings.publicUrl)
  const publicBase = new URL(publicUrl)
  // Email links resolve these paths against API_EXTERNAL_URL, where an absolute path drops the prefix.
  const prefix = trimTrailingSlash(publicBase.pathname)
  const origin = publicBase.origin
  const siteUrl = settings.siteUrl ?? origin

  return {
    GOTRUE_DB_DRIVER: 'postgres',
    DATABASE_URL: settings.databaseUrl,
    DB_NAMESPACE: 'auth',
    // Unset, Supabase Auth keeps no idle database connection (Go's SetMaxIdleConns(0)) and opens a new
    // one for every query: about 30 ms each here, 150 ms for a GET /user of five queries. Deployments
    // set a pool; so does this, which made the end-to-end suite several times faster.
    GOTRUE_DB_MAX_IDLE_POOL_SIZE: '10',

    GOTRUE_API_HOST: '127.0.0.1',
    PORT: String(settings.port),
    API_EXTERNAL_URL: publicUrl,
    GOTRUE_SITE_URL: siteUrl,
    GOTRUE_URI_ALLOW_LIST: [
      'http://localhost:*',
      'http://localhost:*/**',
      'http://127.0.0.1:*',
      'http://127.0.0.1:*/**',
    ].join(','),
    GOTRUE_LOG_LEVEL: 'warn',

    GOTRUE_JWT_SECRET: settings.jwtSecret,
    GOTRUE_JWT_KEYS: JSON.stringify([settings.signingJwk]),
    // With JWT keys the accepted algorithms default to the keys' only; HS256 stays accepted
    // so service-role tokens signed with the secret keep working for the admin API.
    GOTRUE_JWT_VALID_METHODS: `${settings.signingJwk.alg},HS256`,
    GOTRUE_JWT_ISSUER: publicUrl,
    GOTRUE_JWT_AUD: 'authenticated',
    // The `role` of users' tokens, as on Supabase's platform (PostgreSQL's role for signed-in users);
    // unset, Supabase Auth writes an empty role. It logs a deprecation notice for this variable at start.
    GOTRUE_JWT_DEFAULT_GROUP_NAME: 'authenticated',
    GOTRUE_JWT_EXP: '3600',

    GOTRUE_EXTERNAL_EMAIL_ENABLED: 'true',
    GOTRUE_MAILER_AUTOCONFIRM: 'true',
    GOTRUE_SMTP_HOST: '',
    GOTRUE_SMTP_MAX_FREQUENCY: '1ms',
    GOTRUE_MAILER_URLPATHS_CONFIRMATION: `${prefix}/verify`,
    GOTRUE_MAILER_URLPATHS_INVITE: `${prefix}/verify`,
    GOTRUE_MAILER_URLPATHS_RECOVERY: `${prefix}/verify`,
    GOTRUE_MAILER_URLPATHS_EMAIL_CHANGE: `${prefix}/verify`,

    GOTRUE_EXTERNAL_PHONE_ENABLED: 'true',
    // Off so phone sign-up goes through a real OTP verification (with the fixed test OTPs).
    GOTRUE_SMS_AUTOCONFIRM: 'false',
    GOTRUE_SMS_MAX_FREQUENCY: '1ms',
    GOTRUE_SMS_TEST_OTP: Object.entries(TEST_PHONE_OTPS)
      .map(([phone, otp]) => `${phone}:${otp}`)
      .join(','),

    GOTRUE_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',

    // A provider with fake credentials: enough for GET /authorize to answer its 302.
    GOTRUE_EXTERNAL_GITHUB_ENABLED: 'true',
    GOTRUE_EXTERNAL_GITHUB_CLIENT_ID: 'authgate-e2e-client',
    GOTRUE_EXTERNAL_GITHUB_SECRET: 'authgate-e2e-secret',
    GOTRUE_EXTERNAL_GITHUB_REDIRECT_URI: `${publicUrl}/callback`,

    GOTRUE_PASSKEY_ENABLED: 'true',
    // WebAuthn RP IDs are host names; browsers only accept one matching the page's host.
    GOTRUE_WEBAUTHN_RP_ID: publicBase.hostname,
    GOTRUE_WEBAUTHN_RP_DISPLAY_NAME: 'authgate e2e',
    GOTRUE_WEBAUTHN_RP_ORIGINS: origin,

    GOTRUE_OAUTH_SERVER_ENABLED: 'true',
    GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: 'true',
    GOTRUE_OAUTH_SERVER_AUTHORIZATION_PATH: OAUTH_CONSENT_PATH,

    // authgate sets this header to the client IP it decided on.
    GOTRUE_RATE_LIMIT_HEADER: CLIENT_IP_HEADER,
    GOTRUE_RATE_LIMIT_EMAIL_SENT: UNLIMITED,
    GOTRUE_RATE_LIMIT_SMS_SENT: UNLIMITED,
    GOTRUE_RATE_LIMIT_VERIFY: UNLIMITED,
    GOTRUE_RATE_LIMIT_TOKEN_REFRESH: UNLIMITED,
    GOTRUE_RATE_LIMIT_SSO: UNLIMITED,
    GOTRUE_RATE_LIMIT_ANONYMOUS_USERS: UNLIMITED,
    GOTRUE_RATE_LIMIT_OTP: UNLIMITED,
    GOTRUE_RATE_LIMIT_WEB3: UNLIMITED,
    GOTRUE_RATE_LIMIT_PASSKEY: UNLIMITED,
    GOTRUE_RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: UNLIMITED,
    GOTRUE_MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY: UNLIMITED,
  }
}
