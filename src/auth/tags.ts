import type { AuthTag } from './routes/index.ts'

/**
 * The description the document gives each tag of the mounted routes. Keyed by the table's tag
 * type, so a tag added to the table without a description does not compile.
 */
export const AUTH_TAG_DESCRIPTIONS: Record<AuthTag, string> = {
  Auth: 'Supabase Auth core endpoints: health, settings, sign-up, sign-in and tokens, one-time codes, verification, recovery, the signed-in user, reauthentication, the redirect flows of external providers, and linking identities to the user.',
  OAuth:
    'The OAuth 2.1 authorization server of Supabase Auth: discovery metadata, keys, authorization, tokens, dynamic client registration and userinfo, the consent step and the grants a user has given.',
  Passkey: 'Passkeys (WebAuthn): registering, signing in with, listing, renaming and deleting passkeys.',
  MFA: 'Multi-factor authentication: enrolling a factor, challenging and verifying it (which raises the session to aal2), and unenrolling it.',
  SSO: 'SAML single sign-on: starting a sign-in with an identity provider, the service provider metadata and the assertion consumer service.',
}
