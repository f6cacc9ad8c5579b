// The protect module's failures, apart from the JOSE code that raises them: the route hooks (and so
// `defineRoute`) need these classes, and importing them must not load the JOSE library into every
// process that never verifies a token.

/** The key set cannot be had: the backend is down, slow, or answered something that is not a JWKS. */
export class JwksUnavailableError extends Error {
  readonly timeout: boolean
  constructor(cause: unknown, timeout: boolean) {
    super(`the JSON Web Key Set could not be fetched: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
    this.name = 'JwksUnavailableError'
    this.timeout = timeout
  }
}

/** Why a token was refused, in the vocabulary of RFC 6750 and our error codes. */
export class TokenRejected extends Error {
  readonly code: 'bad_jwt'
  constructor(description: string, options?: { cause?: unknown }) {
    super(description, options)
    this.name = 'TokenRejected'
    this.code = 'bad_jwt'
  }
}
