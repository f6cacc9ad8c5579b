import type { FastifyReply, FastifyRequest } from 'fastify'
import { heldJson, type HeldAnswer } from '../../core/held-answer.ts'
import { isRecord } from '../../core/is-record.ts'
import { sendError } from '../../errors.ts'
import { backendPairs, backendValues } from '../../core/go-values.ts'
import { isClientIdUrl } from './document.ts'
import type { ClientMetadataRegistry, Unusable } from './registry.ts'

/**
 * Where a client ID metadata document's URL meets Supabase Auth, which knows its clients by UUID:
 * the URL is replaced by the UUID in what is forwarded (the authorization's query, the token
 * request's body, the grant revocation's query) and the UUID by the URL in what the user's pages
 * read (the authorization details, the grant list), so neither side sees the other's id.
 */

const registryOf = (request: FastifyRequest): ClientMetadataRegistry | undefined =>
  request.server.authgate.clientMetadata

/** A lookup whose store (Redis) failed: 503 and a log line, never the backend's turn. */
async function storeAnswer<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  run: () => Promise<T>,
): Promise<{ value: T } | { answered: unknown }> {
  try {
    return { value: await run() }
  } catch (err) {
    request.log.error({ err }, 'client metadata: the mapping could not be read or written')
    return { answered: sendError(request, reply, 'client_metadata_unavailable') }
  }
}

// The query (or form body) forwarded in place of the request's own, when a URL was translated.
const translatedQueries = new WeakMap<FastifyRequest, string>()

/** The query string to forward in place of the request's (with its `?`), when one was translated. */
export const forwardedQuery = (request: FastifyRequest): string | undefined => translatedQueries.get(request)

/**
 * The first `client_id` of a form-encoded string (query or body) as Go reads it (a pair Go drops
 * does not count), and the string with every `client_id` Go reads replaced by one
 * `client_id=<id>` where the first stood; the other pairs keep their bytes.
 */
export function formClientId(form: string): { value: string; with(id: string): string } | undefined {
  const pairs = backendPairs(form)
  const at = pairs.findIndex((p) => p.read?.key === 'client_id')
  if (at === -1) return undefined
  return {
    value: pairs[at]!.read!.value,
    with: (id) =>
      pairs
        .filter((p, i) => i === at || p.read?.key !== 'client_id')
        .map((p) => (p === pairs[at] ? `client_id=${encodeURIComponent(id)}` : p.raw))
        .join('&'),
  }
}

function refuse(request: FastifyRequest, reply: FastifyReply, clientId: string, unusable: Unusable) {
  request.log.warn({ clientId, reason: unusable.reason }, 'client metadata: the client ID URL cannot be used')
  if (unusable.kind === 'limited')
    return sendError(
      request,
      reply,
      'over_request_rate_limit',
      `The client could not be registered: ${unusable.reason}`,
    )
  return unusable.kind === 'backend'
    ? sendError(request, reply, 'backend_unreachable', `The client could not be registered: ${unusable.reason}`)
    : sendError(request, reply, 'validation_failed', `Invalid client_id: ${unusable.reason}`)
}

const HEX32 = /^[0-9a-f]{32}$/i
const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * A client id as Supabase Auth's UUID parser (gofrs/uuid's `FromString`) reads it, in the canonical
 * form it registered clients under, or undefined when that parser refuses it: any case, with or
 * without hyphens, in braces, or after `urn:uuid:`. A replaced client is refused under every
 * spelling Supabase Auth would take for it.
 */
export function backendClientId(text: string): string | undefined {
  let t = text
  if ((t.length === 41 || t.length === 45) && t.slice(0, 9).toLowerCase() === 'urn:uuid:') t = t.slice(9)
  else if ((t.length === 34 || t.length === 38) && t.startsWith('{') && t.endsWith('}')) t = t.slice(1, -1)
  if (t.length === 36 && CANONICAL.test(t)) return t.toLowerCase()
  if (t.length === 32 && HEX32.test(t)) {
    const h = t.toLowerCase()
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
  return undefined
}
const REPLACED = "this client was replaced when its metadata document changed; use the document's URL"

/** Whether `clientId` names a backend client a document's change replaced (refused: it has the old redirect URIs). */
async function replacedClient(
  request: FastifyRequest,
  reply: FastifyReply,
  registry: ClientMetadataRegistry,
  clientId: string,
): Promise<{ value: boolean } | { answered: unknown }> {
  const id = backendClientId(clientId)
  if (id === undefined) return { value: false }
  const got = await storeAnswer(request, reply, () => registry.isReplaced(id))
  if ('value' in got && got.value) request.log.warn({ clientId }, `client metadata: ${REPLACED}`)
  return got
}

const queryOf = (request: FastifyRequest) => {
  const url = request.raw.url ?? ''
  const q = url.indexOf('?')
  return q === -1 ? '' : url.slice(q + 1)
}

/**
 * `GET /oauth/authorize` with a document's URL: the document fetched and checked, the backend
 * client found or registered, the `redirect_uri` checked against the document's (never
 * redirected to when it is not one: it is not the client's), the UUID forwarded.
 */
export async function authorizeClientId(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const registry = registryOf(request)
  const query = queryOf(request)
  const found = formClientId(query)
  if (registry === undefined || found === undefined) return undefined
  if (!isClientIdUrl(found.value)) {
    const replaced = await replacedClient(request, reply, registry, found.value)
    if ('answered' in replaced) return replaced.answered
    return replaced.value ? sendError(request, reply, 'validation_failed', `Invalid client_id: ${REPLACED}`) : undefined
  }
  const got = await storeAnswer(request, reply, () => registry.resolve(found.value, request.log))
  if ('answered' in got) return got.answered
  const resolved = got.value
  if (!resolved.ok) return refuse(request, reply, found.value, resolved)
  const redirect = backendValues(query).redirect_uri
  if (redirect !== undefined && redirect !== '' && !resolved.document.redirectUris.includes(redirect)) {
    request.log.warn(
      { clientId: found.value, redirectUri: redirect },
      'client metadata: redirect_uri not in the document',
    )
    return sendError(
      request,
      reply,
      'validation_failed',
      "Invalid redirect_uri: not one of the client's metadata document",
    )
  }
  translatedQueries.set(request, `?${found.with(resolved.id)}`)
  return undefined
}

/** `DELETE /user/oauth/grants?client_id=<URL>`: the grant of the document's client. */
export async function revokeGrantClientId(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const registry = registryOf(request)
  const found = formClientId(queryOf(request))
  if (registry === undefined || found === undefined || !isClientIdUrl(found.value)) return undefined
  const got = await storeAnswer(request, reply, () => registry.idOf(found.value, request.log))
  if ('answered' in got) return got.answered
  const known = got.value
  if (!known.ok) return refuse(request, reply, found.value, known)
  translatedQueries.set(request, `?${found.with(known.id)}`)
  return undefined
}

/**
 * `POST /oauth/token` with a document's URL as `client_id` in the body (a public client: the
 * document may name no secret): the backend client's UUID forwarded. A URL that cannot be used is
 * `invalid_client` (RFC 6749 §5.2).
 */
export async function tokenClientId(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const registry = registryOf(request)
  const raw = request.rawBody
  if (registry === undefined || raw === undefined || raw.length === 0) return undefined
  const json = /^application\/json/i.test(request.headers['content-type'] ?? '')
  let named: string | undefined
  let url: string | undefined
  let rewrite: ((id: string) => Buffer) | undefined
  if (json) {
    const body: unknown = request.body
    if (isRecord(body) && typeof body.client_id === 'string') {
      named = body.client_id
      if (isClientIdUrl(named)) {
        url = named
        rewrite = (id) => Buffer.from(JSON.stringify({ ...body, client_id: id }), 'utf8')
      }
    }
  } else {
    const found = formClientId(raw.toString('utf8'))
    named = found?.value
    if (found !== undefined && isClientIdUrl(found.value)) {
      url = found.value
      rewrite = (id) => Buffer.from(found.with(id), 'utf8')
    }
  }
  if (named !== undefined && url === undefined) {
    // A replaced client's refresh tokens and codes are refused as an unknown client's would be.
    const replaced = await replacedClient(request, reply, registry, named)
    if ('answered' in replaced) return replaced.answered
    return replaced.value ? sendError(request, reply, 'invalid_client', `Invalid client_id: ${REPLACED}`) : undefined
  }
  if (url === undefined || rewrite === undefined) return undefined
  const target = url
  const got = await storeAnswer(request, reply, () => registry.idOf(target, request.log))
  if ('answered' in got) return got.answered
  const known = got.value
  if (!known.ok) {
    request.log.warn({ clientId: url, reason: known.reason }, 'client metadata: the client ID URL cannot be used')
    if (known.kind === 'limited')
      return sendError(request, reply, 'over_request_rate_limit', `The client could not be registered: ${known.reason}`)
    return known.kind === 'backend'
      ? sendError(request, reply, 'backend_unreachable', `The client could not be registered: ${known.reason}`)
      : sendError(request, reply, 'invalid_client', `Invalid client_id: ${known.reason}`)
  }
  request.rawBody = rewrite(known.id)
  return undefined
}

/** A `client` object of the backend's answers with its `id` the document's URL, when it stands for one. */
async function clientWithUrl(registry: ClientMetadataRegistry, client: unknown): Promise<unknown> {
  if (!isRecord(client) || typeof client.id !== 'string') return client
  // A store that cannot answer leaves the UUID: the answer stays readable, only less friendly.
  const url = await registry.urlOf(client.id).catch(() => undefined)
  return url === undefined ? client : { ...client, id: url }
}

/** The authorization details' `client.id`: the URL the client knows itself by. */
export async function authorizationClientUrl(answer: HeldAnswer, request: FastifyRequest): Promise<HeldAnswer> {
  const registry = registryOf(request)
  if (registry === undefined || answer.status !== 200) return answer
  const body = heldJson(answer)
  if (body === undefined || !isRecord(body.client)) return answer
  const client = await clientWithUrl(registry, body.client)
  if (client === body.client) return answer
  return { ...answer, body: Buffer.from(JSON.stringify({ ...body, client }), 'utf8') }
}

/** The grant list's clients by the URLs they know themselves by. */
export async function grantClientUrls(answer: HeldAnswer, request: FastifyRequest): Promise<HeldAnswer> {
  const registry = registryOf(request)
  if (registry === undefined || answer.status !== 200) return answer
  let body: unknown
  try {
    body = JSON.parse(answer.body.toString('utf8'))
  } catch {
    return answer
  }
  if (!Array.isArray(body)) return answer
  let changed = false
  const grants = await Promise.all(
    body.map(async (grant: unknown) => {
      if (!isRecord(grant)) return grant
      const client = await clientWithUrl(registry, grant.client)
      if (client === grant.client) return grant
      changed = true
      return { ...grant, client }
    }),
  )
  return changed ? { ...answer, body: Buffer.from(JSON.stringify(grants), 'utf8') } : answer
}

/** The metadata says that an https URL may be the `client_id` (the draft's §4). */
export function advertiseClientMetadata(answer: HeldAnswer, request: FastifyRequest): HeldAnswer {
  if (registryOf(request) === undefined || answer.status !== 200) return answer
  const body = heldJson(answer)
  if (body === undefined || typeof body.issuer !== 'string' || 'client_id_metadata_document_supported' in body)
    return answer
  const text = answer.body.toString('utf8').trimEnd()
  return {
    ...answer,
    body: Buffer.from(`${text.slice(0, -1)},"client_id_metadata_document_supported":true}`, 'utf8'),
  }
}
