/**
 * Every mounted route belongs to one group. Operators turn whole features off by group
 * (`AUTHGATE_DISABLED_GROUPS=sso,mfa`, or the plugin's `config.disabledGroups`): the routes of a
 * disabled group are not mounted (404, never forwarded) and are absent from the OpenAPI document.
 * `core` (sign-up, sign-in, sessions, the user, e-mail links, signing keys) cannot be turned off.
 */
export const ROUTE_GROUPS = {
  core: 'sign-up, sign-in, sessions, the user, e-mail links, external providers, signing keys',
  oauth: 'the OAuth 2.1 / OpenID Connect server: discovery, authorize, token, registration, userinfo, consent, grants',
  passkeys: 'passkey registration, sign-in and management',
  mfa: 'multi-factor authentication: enrol, challenge, verify, unenrol factors',
  identities: 'manual identity linking and unlinking',
  sso: 'SAML single sign-on',
} as const

export type RouteGroup = keyof typeof ROUTE_GROUPS
export type OptionalGroup = Exclude<RouteGroup, 'core'>
export const OPTIONAL_GROUPS = Object.keys(ROUTE_GROUPS).filter((g) => g !== 'core') as OptionalGroup[]
