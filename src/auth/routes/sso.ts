import { Type } from 'typebox'
import { str } from '../types/common.ts'
import { SSORequest, UrlResponse } from '../types/sso.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { RATE, ok, redirect } from './shared.ts'

const SAML_OFF = 'saml_provider_disabled'

/** SAML single sign-on: the browser-facing protocol endpoints are relayed byte for byte. */
const SSO: GroupDefaults = { kind: 'relay', tag: 'SSO', group: 'sso', bearer: false, rateLimited: false }

export const ssoRoutes = withDefaults(SSO, [
  {
    method: 'POST',
    path: '/sso',
    kind: 'typed',
    summary: 'Start a SAML single sign-on',
    description:
      'Finds the SAML identity provider by id or e-mail domain and redirects to it (303), or answers `{url}` with `skip_http_redirect: true`, as supabase-js asks. 404 `saml_provider_disabled` when SAML is off on Supabase Auth.',
    emptyIsAbsent: ['code_challenge', 'code_challenge_method'],
    body: SSORequest,
    responses: {
      200: { description: 'The identity provider URL (`skip_http_redirect: true`)', schema: UrlResponse },
      303: redirect('To the identity provider'),
    },
    errors: { 400: ['captcha_failed'], 404: [SAML_OFF, 'sso_provider_not_found'], 429: [RATE] },
  },
  {
    method: 'GET',
    path: '/sso/saml/metadata',
    summary: 'SAML service provider metadata',
    description:
      "Supabase Auth's SAML 2.0 service provider metadata (XML) for identity providers. Relayed byte for byte.",
    query: Type.Object({
      download: Type.Optional(str('`true`: served as a download, valid for five years', 'true')),
    }),
    responses: ok('SAML metadata (`application/xml`)'),
    errors: { 404: [SAML_OFF] },
  },
  {
    method: 'POST',
    path: '/sso/saml/acs',
    summary: 'SAML assertion consumer service',
    description:
      'Where the identity provider posts the SAML response (a form). The body is forwarded as is; Supabase Auth redirects to the application.',
    responses: {
      302: redirect('To the application, with the session'),
      303: redirect('To the application with an error'),
    },
    errors: {
      400: ['saml_assertion_no_email', 'saml_assertion_no_user_id', 'flow_state_already_used'],
      404: [SAML_OFF, 'saml_idp_not_found', 'saml_relay_state_not_found'],
      422: ['saml_relay_state_expired'],
      429: [RATE],
    },
  },
])
