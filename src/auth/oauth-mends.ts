import { heldJson, type HeldAnswer } from '../core/held-answer.ts'

/**
 * RFC 7591 §3.2.1: a registration answer that issues a `client_secret` must say when it expires
 * (`0`: never). Supabase Auth's secrets do not expire and it leaves the field out, so conforming
 * clients (oauth4webapi) refuse the registration; authgate adds it (docs/decisions.md, D28).
 * Every other answer, and every other byte of this one, is relayed as it came.
 */
export function completeClientRegistration(answer: HeldAnswer): HeldAnswer {
  if (answer.status !== 201) return answer
  const body = heldJson(answer)
  if (body === undefined || typeof body.client_secret !== 'string' || 'client_secret_expires_at' in body) return answer
  // Appended before the closing brace, so the backend's own bytes (and their order) are kept.
  const text = answer.body.toString('utf8').trimEnd()
  const mended = `${text.slice(0, -1)},"client_secret_expires_at":0}`
  return { ...answer, body: Buffer.from(mended, 'utf8') }
}
