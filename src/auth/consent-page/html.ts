/**
 * The consent page's markup: one small document, its style inline, no script and nothing loaded
 * from anywhere (the Content-Security-Policy of the route says so too).
 */

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1c1c1c}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{font-weight:600}
ul{padding-left:1.2rem}label{display:block;margin:.75rem 0 .25rem}input[type=email],input[type=password]{width:100%;padding:.5rem;font:inherit}
button{font:inherit;padding:.5rem 1.25rem;margin:1rem .5rem 0 0;cursor:pointer}.error{color:#a40000}`

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin"><title>${escape(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`
}

/** Hidden fields of a form, escaped. */
const hidden = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('')

/** What the user reads about the request before deciding. */
export interface ConsentView {
  clientName: string
  /** The client's id as the client knows it (a metadata document's URL, or the UUID). */
  clientId: string
  redirectHost: string
  scopes: string[]
  userEmail: string | undefined
  action: string
  /** The hidden fields the decision is posted with (authorization id, CSRF token, the credential). */
  fields: Record<string, string>
}

/** Plain words for the scopes Supabase Auth grants; others are shown as they are. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'know who you are (your user id)',
  email: 'see your e-mail address',
  profile: 'see your profile (name, picture)',
  phone: 'see your phone number',
  offline_access: 'stay signed in (a refresh token)',
}

export function consentPage(view: ConsentView): string {
  const scopes = view.scopes.length
    ? `<ul>${view.scopes.map((s) => `<li><code>${escape(s)}</code>${SCOPE_WORDS[s] ? ` — ${escape(SCOPE_WORDS[s])}` : ''}</li>`).join('')}</ul>`
    : '<p>No scopes.</p>'
  return page(
    `Authorize ${view.clientName}`,
    `<h1>Authorize ${escape(view.clientName)}?</h1>
<dl><dt>Application</dt><dd>${escape(view.clientName)}</dd><dt>Client id</dt><dd><code>${escape(view.clientId)}</code></dd>
<dt>Sends you back to</dt><dd><strong>${escape(view.redirectHost)}</strong></dd>${view.userEmail ? `<dt>Signed in as</dt><dd>${escape(view.userEmail)}</dd>` : ''}</dl>
<p>It asks to:</p>${scopes}
<form method="post" action="${escape(view.action)}">${hidden(view.fields)}
<button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="deny">Deny</button></form>`,
  )
}

/** The sign-in form; `ticket` is the authorization's, from the link Supabase Auth sent the browser to. */
export function signInPage(action: string, authorizationId: string, ticket: string, error: string | undefined): string {
  return page(
    'Sign in to continue',
    `<h1>Sign in to continue</h1><p>An application asks for access to your account. Sign in to see what it asks for.</p>
${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
<form method="post" action="${escape(action)}">${hidden({ authorization_id: authorizationId, ticket, decision: 'sign_in' })}
<label for="email">E-mail</label><input id="email" type="email" name="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`,
  )
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escape(title)}</h1><p>${escape(message)}</p>`)
}
