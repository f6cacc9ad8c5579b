import type { FastifyBaseLogger } from 'fastify'
import type { BackendFetch } from '../../core/backend.ts'
import { clientIdUrlProblem, validateClientDocument, type ClientDocument } from './document.ts'
import { DocumentFetchError, type DocumentFetcher } from './fetch.ts'
import type { ClientIdStore, ClientRecord } from './store.ts'

/** What the registry needs of the connection to Supabase Auth. */
export interface RegistryBackend {
  resolve(path: string): URL
  fetch: BackendFetch
}

export interface RegistryOptions {
  /** Origins whose documents are accepted, or any. */
  origins: 'any' | readonly string[]
  fetcher: Pick<DocumentFetcher, 'fetch' | 'close'>
  store: ClientIdStore
  backend: RegistryBackend
  /** How long a document is reused when its answer says nothing of freshness (ms). */
  defaultFreshMs: number
  /** Longest a document is reused, whatever its answer says (ms). */
  maxFreshMs: number
  /** Documents kept in this process at most (the oldest goes first). */
  maxDocuments?: number
  /** Client id → URL translations kept in this process at most (the least recently used goes first). */
  maxUrls?: number
  now?: () => number
}

/**
 * Why a client ID URL cannot be used: the client's fault (`invalid`), the backend's (`backend`), or
 * the registration quota spent for now (`limited`).
 */
export type Unusable = { ok: false; kind: 'invalid' | 'backend' | 'limited'; reason: string }
export type Resolved = { ok: true; id: string; document: ClientDocument } | Unusable

interface CachedDocument {
  document: ClientDocument
  until: number
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i])

/**
 * One Supabase Auth client per client ID metadata document: the document fetched and validated
 * (reused while its HTTP answer says it is fresh), a public client registered at the backend's
 * registration route with its redirect URIs and name, and registered anew when those change
 * (Supabase Auth updates clients only on its admin API). The two ids are translated both ways.
 */
export class ClientMetadataRegistry {
  readonly #o: RegistryOptions
  readonly #documents = new Map<string, CachedDocument>()
  readonly #pending = new Map<string, Promise<Resolved>>()
  // Backend client id → document URL, as read from the store: the most recently used kept.
  readonly #urls = new Map<string, string>()
  readonly #now: () => number

  constructor(options: RegistryOptions) {
    this.#o = options
    this.#now = options.now ?? Date.now
  }

  /**
   * The backend client for a document's URL, the document fetched when not fresh, the client
   * registered (or registered anew) as needed. Concurrent calls for one URL share the work.
   */
  resolve(url: string, log: FastifyBaseLogger): Promise<Resolved> {
    const pending = this.#pending.get(url)
    if (pending !== undefined) return pending
    const work = this.#resolve(url, log).finally(() => this.#pending.delete(url))
    this.#pending.set(url, work)
    return work
  }

  /**
   * The backend client id of a URL that went through an authorization: the stored one, without
   * fetching the document again (the token endpoint; the document was checked when the user
   * authorized). A URL never seen is resolved.
   */
  async idOf(url: string, log: FastifyBaseLogger): Promise<{ ok: true; id: string } | Unusable> {
    const problem = this.#problem(url)
    if (problem !== undefined) return problem
    const stored = await this.#o.store.byUrl(url)
    if (stored !== undefined) return { ok: true, id: stored.id }
    const resolved = await this.resolve(url, log)
    return resolved.ok ? { ok: true, id: resolved.id } : resolved
  }

  /** The document URL a backend client id stands for, undefined for a client registered otherwise. */
  async urlOf(id: string): Promise<string | undefined> {
    const known = this.#urls.get(id)
    if (known !== undefined) {
      this.#remember(id, known)
      return known
    }
    const url = await this.#o.store.urlOf(id)
    if (url !== undefined) this.#remember(id, url)
    return url
  }

  /**
   * Whether a backend client id is one a document's change replaced: Supabase Auth still knows it
   * with the document's old redirect URIs (its dynamic registration cannot delete or change a
   * client), so authgate refuses it where a client names it.
   */
  isReplaced(id: string): Promise<boolean> {
    return this.#o.store.isReplaced(id)
  }

  #remember(id: string, url: string): void {
    this.#urls.delete(id)
    this.#urls.set(id, url)
    if (this.#urls.size > (this.#o.maxUrls ?? 1000)) this.#urls.delete(this.#urls.keys().next().value!)
  }

  /** Why a URL is not one authgate fetches documents from. */
  #problem(url: string): Unusable | undefined {
    const problem = clientIdUrlProblem(url)
    if (problem !== undefined) return { ok: false, kind: 'invalid', reason: `client_id: ${problem}` }
    const origins = this.#o.origins
    if (origins !== 'any' && !origins.includes(new URL(url).origin))
      return { ok: false, kind: 'invalid', reason: `documents of ${new URL(url).origin} are not accepted` }
    return undefined
  }

  async #resolve(url: string, log: FastifyBaseLogger): Promise<Resolved> {
    const problem = this.#problem(url)
    if (problem !== undefined) return problem
    const document = await this.#document(url)
    if (!document.ok) return document
    const stored = await this.#o.store.byUrl(url)
    const wanted = document.document
    if (
      stored !== undefined &&
      sameList(stored.redirectUris, wanted.redirectUris) &&
      stored.clientName === wanted.clientName
    )
      return { ok: true, id: stored.id, document: wanted }
    // Every registration is a client Supabase Auth keeps for good: so many per document origin and
    // in all per window, so that a stream of new document URLs cannot fill its client table.
    const origin = new URL(url).origin
    if (!(await this.#o.store.admitRegistration(origin))) {
      log.warn({ clientId: url, origin }, 'client metadata: the registration quota is spent; the document waits')
      return {
        ok: false,
        kind: 'limited',
        reason: `too many clients registered for documents of ${origin} or in all; try again later`,
      }
    }
    const registered = await this.#register(wanted)
    if (!registered.ok) return registered
    const stood = await this.#o.store.replace(url, stored, registered.record)
    if (stood.id !== registered.record.id)
      log.info({ clientId: url }, 'client metadata: another replica registered this document first; its client is used')
    else if (stored !== undefined)
      log.info(
        { clientId: url, previous: stored.id, client: stood.id },
        "client metadata: the document's redirect URIs or name changed; a new backend client stands for it",
      )
    else
      log.info({ clientId: url, client: stood.id }, 'client metadata: a backend client was registered for the document')
    this.#remember(stood.id, url)
    if (stored !== undefined && stood.id !== stored.id) this.#urls.delete(stored.id)
    return { ok: true, id: stood.id, document: wanted }
  }

  async #document(url: string): Promise<{ ok: true; document: ClientDocument } | Unusable> {
    const now = this.#now()
    const cached = this.#documents.get(url)
    if (cached !== undefined && now < cached.until) return { ok: true, document: cached.document }
    let fetched
    try {
      fetched = await this.#o.fetcher.fetch(url, now)
    } catch (err) {
      if (err instanceof DocumentFetchError) return { ok: false, kind: 'invalid', reason: err.message }
      throw err
    }
    const valid = validateClientDocument(url, fetched.body)
    if (!valid.ok) return { ok: false, kind: 'invalid', reason: valid.reason }
    const freshMs = Math.min(fetched.freshMs ?? this.#o.defaultFreshMs, this.#o.maxFreshMs)
    this.#documents.delete(url)
    if (freshMs > 0) {
      this.#documents.set(url, { document: valid.document, until: now + freshMs })
      const max = this.#o.maxDocuments ?? 1000
      if (this.#documents.size > max) this.#documents.delete(this.#documents.keys().next().value!)
    }
    return valid
  }

  /** A public client at the backend's registration route, with the document's redirect URIs and name. */
  async #register(document: ClientDocument): Promise<{ ok: true; record: ClientRecord } | Unusable> {
    const body = {
      client_name: document.clientName ?? new URL(document.clientId).host,
      redirect_uris: document.redirectUris,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }
    let answer
    try {
      answer = await this.#o.backend.fetch(this.#o.backend.resolve('/oauth/clients/register'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      })
    } catch (err) {
      return { ok: false, kind: 'backend', reason: `registering the client failed: ${(err as Error).message}` }
    }
    const text = await answer.text()
    let parsed: { client_id?: unknown; msg?: unknown; message?: unknown } = {}
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch {
      // judged by the status below
    }
    if (answer.status === 201 && typeof parsed.client_id === 'string')
      return {
        ok: true,
        record: { id: parsed.client_id, redirectUris: document.redirectUris, clientName: document.clientName },
      }
    const said = typeof parsed.msg === 'string' ? parsed.msg : typeof parsed.message === 'string' ? parsed.message : ''
    // A 400 is the document's content (a redirect URI Supabase Auth refuses); anything else the backend's.
    return {
      ok: false,
      kind: answer.status === 400 ? 'invalid' : 'backend',
      reason: `Supabase Auth refused to register a client for the document (${answer.status}${said ? `: ${said}` : ''})`,
    }
  }

  /** True once the mapping's store answers (Redis connected), false if not within `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean> {
    return this.#o.store.ready(timeoutMs)
  }

  close(): Promise<void> {
    return Promise.all([this.#o.fetcher.close(), this.#o.store.close()]).then(() => undefined)
  }
}
