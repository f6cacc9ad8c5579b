/**
 * `WWW-Authenticate: Bearer ...` (RFC 6750 §3). Attribute values are quoted strings whose allowed
 * characters exclude `"` and `\`, so anything else is replaced rather than escaped.
 */
export interface BearerChallenge {
  error?: 'invalid_token' | 'invalid_request' | 'insufficient_scope' | 'insufficient_user_authentication'
  description?: string
  scope?: string
  /** RFC 9470: the authentication context classes that would do (Supabase's assurance levels). */
  acrValues?: string
  /** RFC 9728: where the protected resource's metadata is. */
  resourceMetadata?: string | undefined
}

const clean = (s: string) => s.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, ' ')

export function bearerChallenge(c: BearerChallenge): string {
  const parts: string[] = []
  if (c.error) parts.push(`error="${c.error}"`)
  if (c.description) parts.push(`error_description="${clean(c.description)}"`)
  if (c.scope) parts.push(`scope="${clean(c.scope)}"`)
  if (c.acrValues) parts.push(`acr_values="${clean(c.acrValues)}"`)
  if (c.resourceMetadata) parts.push(`resource_metadata="${clean(c.resourceMetadata)}"`)
  return parts.length > 0 ? `Bearer ${parts.join(', ')}` : 'Bearer'
}
