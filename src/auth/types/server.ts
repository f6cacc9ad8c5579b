import { Type } from 'typebox'
import { bool, str } from './common.ts'

export const HealthResponse = Type.Object(
  {
    version: str('Build version (empty when built without one)', 'v2.196.0'),
    name: str('Always `GoTrue`', 'GoTrue'),
    description: str('Fixed text', 'GoTrue is a user registration and authentication API'),
  },
  { title: 'HealthResponse', description: 'Liveness of Supabase Auth (no database check)' },
)

const PROVIDERS = [
  'anonymous_users',
  'apple',
  'azure',
  'bitbucket',
  'discord',
  'facebook',
  'snapchat',
  'figma',
  'fly',
  'github',
  'gitlab',
  'google',
  'keycloak',
  'kakao',
  'linkedin',
  'linkedin_oidc',
  'notion',
  'spotify',
  'slack',
  'slack_oidc',
  'workos',
  'twitch',
  'twitter',
  'email',
  'phone',
  'zoom',
] as const

export const SettingsResponse = Type.Object(
  {
    external: Type.Object(
      Object.fromEntries(
        PROVIDERS.map((p) => [p, Type.Optional(bool(`Whether ${p} sign-in is enabled`, p === 'email'))]),
      ),
      { description: 'Enabled sign-in methods', examples: [{ email: true, phone: false, github: true }] },
    ),
    disable_signup: bool('Sign-ups are disabled', false),
    mailer_autoconfirm: bool('E-mail sign-ups are confirmed automatically', true),
    phone_autoconfirm: bool('Phone sign-ups are confirmed automatically', false),
    sms_provider: str('Configured SMS provider', 'twilio'),
    saml_enabled: bool('SAML SSO is enabled', false),
    saml_private_key_next_configured: Type.Optional(bool('A next SAML key is configured', false)),
    passkeys_enabled: Type.Optional(bool('Passkey sign-in is enabled', true)),
  },
  { title: 'SettingsResponse', description: 'Public settings of Supabase Auth' },
)
