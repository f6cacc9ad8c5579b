// How a setting's URL is quoted in a configuration error: whole, but without its credentials.

/**
 * The refusal of a URL that is not http(s), with the whole value: `localhost:9999` parses as the
 * scheme `localhost:`, and naming only that hid what was typed. A missing scheme gets the fix;
 * credentials in the value are not repeated.
 */
export function notHttp(raw: string): string {
  const value = withoutCredentials(raw.trim())
  return `must be an http or https URL, got ${JSON.stringify(value)}${schemeHint(value)}`
}

/** ` (add the scheme: http://host:port)` for a value that looks like an address without one. */
export function schemeHint(value: string, scheme = 'http'): string {
  return /^[\w.-]+(:\d+)?(\/|$)/.test(value) ? ` (add the scheme: ${scheme}://${value})` : ''
}

/** A URL-like value with its user information (`user:password@`) masked, for an error message. */
export function withoutCredentials(value: string): string {
  return value.replace(/^((?:[a-z][\w+.-]*:\/\/)?)[^/?#]*@/i, '$1***@')
}
