/** One request a client made, as seen from its side. */
export interface RecordedCall {
  method: string
  /** Path and query of the URL the client called. */
  target: string
  status: number
}

/**
 * A fetch for the Supabase clients that remembers what was called and what came back, so a test
 * can assert which gateway routes a client method really used and their statuses.
 */
export function recordingFetch(): { fetch: typeof fetch; calls: RecordedCall[]; last(): RecordedCall } {
  const calls: RecordedCall[] = []
  const wrapped: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    const response = await fetch(request)
    const url = new URL(request.url)
    calls.push({ method: request.method, target: url.pathname + url.search, status: response.status })
    return response
  }
  return {
    fetch: wrapped,
    calls,
    last: () => {
      const call = calls.at(-1)
      if (call === undefined) throw new Error('no request was made')
      return call
    },
  }
}
