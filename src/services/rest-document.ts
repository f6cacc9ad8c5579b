import type { FastifyBaseLogger } from 'fastify'
import { requestThrough } from '../core/backend.ts'
import type { ServiceUpstream } from './config.ts'
import type { ServiceProxy } from './proxy.ts'
import { planServiceRequest } from './request.ts'
import { convertPostgrestSwagger, mergeRestPart, type RestDocumentPart } from './swagger.ts'

/** The tag PostgREST's operations carry in authgate's document. */
export const REST_TAG = 'Database (PostgREST)'

/** The longest description read (a project with thousands of tables is a few MiB). */
const MAX_BYTES = 32 * 2 ** 20

export interface RestDocumentOptions {
  proxy: ServiceProxy
  /** The REST service's row (`/rest/v1`). */
  upstream: ServiceUpstream
  /** How often the description is fetched again. */
  refreshMs: number
  log: FastifyBaseLogger
  timeoutMs?: number
}

/**
 * PostgREST's description of the project's tables, fetched with the service key (PostgREST
 * describes to each role what it may see; the service role sees every table) when authgate starts
 * and every `refreshMs`, and merged into the document: a table added to the database appears on
 * the reference page without a restart. A fetch that fails keeps the last description (none at
 * first) and says so once per failure streak; authgate's own document is never held by it.
 */
export class RestDocument {
  /** Bumped whenever the description changes: the document is rendered again. */
  version = 0
  #part: RestDocumentPart | undefined
  #text = ''
  #timer: NodeJS.Timeout | undefined
  #failing = false
  #stopped = false
  readonly #o: RestDocumentOptions

  constructor(options: RestDocumentOptions) {
    this.#o = options
  }

  /** The last description merged into `doc` (`doc` itself while there is none). */
  apply<D extends { paths: Record<string, unknown>; components: Record<string, unknown> }>(doc: D): D {
    return this.#part === undefined ? doc : mergeRestPart(doc, this.#part)
  }

  /** Fetches now and then every `refreshMs`; resolves once the first fetch is over, whatever its outcome. */
  async start(): Promise<void> {
    await this.refresh()
    if (this.#stopped) return
    this.#timer = setInterval(() => void this.refresh(), this.#o.refreshMs)
    this.#timer.unref()
  }

  stop(): void {
    this.#stopped = true
    clearInterval(this.#timer)
  }

  /** One fetch; never throws. */
  async refresh(): Promise<void> {
    const { proxy, upstream, log } = this.#o
    try {
      const key = proxy.keys.serviceKey ?? proxy.defaultKey
      const plan = planServiceRequest(
        upstream,
        proxy.keys,
        undefined,
        { rest: '/', query: undefined },
        {
          ...(key !== undefined ? { apikey: key } : {}),
        },
      )
      if (!plan.ok) throw new Error(`no key to ask with (${plan.code})`)
      const headers: string[] = ['accept', 'application/openapi+json, application/json', ...plan.set]
      const answer = await requestThrough.call(proxy.pool(upstream.origin), {
        method: 'GET',
        path: plan.path,
        headers,
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 10_000),
      })
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > MAX_BYTES) throw new Error(`the description is over ${MAX_BYTES} bytes`)
        chunks.push(chunk)
      }
      if (answer.statusCode !== 200) throw new Error(`PostgREST answered ${answer.statusCode}`)
      const text = Buffer.concat(chunks).toString('utf8')
      if (text !== this.#text) {
        const part = convertPostgrestSwagger(JSON.parse(text), { prefix: upstream.row.prefix, tag: REST_TAG })
        this.#part = part
        this.#text = text
        this.version++
        log.info(
          { service: upstream.label, paths: Object.keys(part.paths).length },
          'REST description merged into the document',
        )
      }
      if (this.#failing) log.info({ service: upstream.label }, 'REST description fetched again')
      this.#failing = false
    } catch (err) {
      if (!this.#failing)
        log.warn(
          { service: upstream.label, err: { message: (err as Error).message } },
          this.#part === undefined
            ? "the REST service's description could not be fetched: the document goes without it"
            : "the REST service's description could not be fetched again: the document keeps the last one",
        )
      this.#failing = true
    }
  }
}
