import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendError } from '../errors.ts'
import type { AuthRoute, QueryRequirement } from './routes/entry.ts'

/** The requirement a request breaks, if any: `query` as the backend reads it (src/core/go-values.ts). */
export function brokenRequirement(
  requirements: readonly QueryRequirement[],
  query: Readonly<Record<string, string>>,
  body: unknown,
): QueryRequirement | undefined {
  const record = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {}
  for (const r of requirements) {
    if (query[r.param] !== r.value) continue
    if (r.fields.some((f) => typeof record[f] !== 'string' || record[f] === '')) return r
  }
  return undefined
}

/**
 * The check that refuses a validated body missing what its query value requires (never forwarded):
 * it answers the refusal itself and returns true (src/auth/mount.ts runs it).
 */
export function queryRequirementsCheck(route: AuthRoute) {
  const requirements = route.requiredByQuery ?? []
  return function checkQueryRequirements(request: FastifyRequest, reply: FastifyReply): boolean {
    // `request.query` is the backend's reading already (readQueryAsBackend, the route's first step).
    const broken = brokenRequirement(requirements, request.query as Record<string, string>, request.body)
    if (broken === undefined) return false
    sendError(request, reply, broken.answer)
    return true
  }
}

/** The sentence the route's description gets for each requirement. */
export function describeRequirements(requirements: readonly QueryRequirement[]): string {
  return requirements
    .map(
      (r) =>
        `With \`${r.param}=${r.value}\`, ${r.fields.map((f) => `\`${f}\``).join(' and ')} ${r.fields.length > 1 ? 'are' : 'is'} required and non-empty (${r.answer.status} \`${r.answer.code}\`: "${r.answer.message}").`,
    )
    .join(' ')
}
