import { Type } from 'typebox'
import { codeChallenge, codeChallengeMethod, metaSecurity, opt, str } from './common.ts'

// SAML single sign-on (supabase-js `signInWithSSO`) and the URL answers of redirect routes asked
// not to redirect.

export const SSORequest = Type.Object(
  {
    // A non-UUID provider_id is refused by Supabase Auth's JSON decoder with its own message;
    // the gateway leaves that judgement to it.
    provider_id: opt(str('SSO provider id (a UUID); exclusive with `domain`', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60')),
    domain: opt(str('E-mail domain registered for an SSO provider; exclusive with `provider_id`', 'example.com')),
    redirect_to: opt(str('Where to send the user after sign-in', 'http://localhost:3000/welcome')),
    skip_http_redirect: opt(
      Type.Union([Type.Boolean(), Type.Null()], {
        description: '`true`: answer `{url}` with 200 instead of a 303 redirect (supabase-js sends `true`)',
        examples: [true],
      }),
    ),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  { title: 'SSORequest', description: 'Start a SAML sign-in with a provider id or an e-mail domain' },
)

export const UrlResponse = Type.Object(
  { url: str('Where to send the browser', 'https://idp.example.com/sso/saml?SAMLRequest=fZJNT8MwDIbv') },
  { title: 'UrlResponse', description: 'The redirect target, as JSON instead of a redirect' },
)
