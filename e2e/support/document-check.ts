import type { IncomingMessage, ServerResponse } from 'node:http'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Ajv as AjvInstance, ValidateFunction } from 'ajv'

// CommonJS default exports under NodeNext (as in src/validation.ts).
const Ajv2020 = (Ajv2020Module as unknown as { default: new (options: object) => AjvInstance }).default
const addFormats = addFormatsModule as unknown as (ajv: AjvInstance) => AjvInstance

/**
 * The end-to-end suite checks the document: every answer authgate gives while a test file runs is
 * recorded (method, target, status, headers, body, and whether it was Supabase Auth's answer), and
 * when the gateway closes each one is judged against authgate's own OpenAPI 3.1 document: the
 * status must be listed for the operation, headers the document requires must be there, and a
 * JSON body must match the response schema. Answers outside every operation (the gateway's 404
 * and 405 for paths and methods it does not mount, the documentation's own routes) are counted
 * apart.
 */

export interface Observed {
  method: string
  /** Path and query as the client sent them. */
  target: string
  status: number
  headers: Record<string, string>
  body: Buffer
  /** The answer came from Supabase Auth (authgate forwarded the request). */
  forwarded: boolean
}

const FORWARDED = Symbol('authgate.e2e.forwarded')
type Marked = IncomingMessage & { [FORWARDED]?: boolean }

/**
 * Copies what goes out on `res` without changing it; `done` gets the bytes and the headers when it
 * finishes (headers given to `writeHead` as a flat list never show in `getHeaders()`).
 */
function tee(res: ServerResponse, done: (body: Buffer, headers: Record<string, string>) => void): void {
  const chunks: Buffer[] = []
  const written: Record<string, string> = {}
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse
  res.writeHead = ((...args: unknown[]) => {
    const headers = args.find((a, i) => i > 0 && typeof a === 'object' && a !== null)
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) written[String(headers[i]).toLowerCase()] = String(headers[i + 1])
    } else if (headers) {
      for (const [k, v] of Object.entries(headers))
        written[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v)
    }
    return writeHead(...args)
  }) as ServerResponse['writeHead']
  const write = res.write.bind(res) as (...args: unknown[]) => boolean
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse
  const keep = (chunk: unknown, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return
    chunks.push(
      Buffer.isBuffer(chunk)
        ? chunk
        : typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : Buffer.from(chunk as Uint8Array),
    )
  }
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1])
    return write(...args)
  }) as ServerResponse['write']
  res.end = ((...args: unknown[]) => {
    keep(args[0], args[1])
    return end(...args)
  }) as ServerResponse['end']
  res.once('finish', () => done(Buffer.concat(chunks), { ...flatHeaders(res), ...written }))
}

function flatHeaders(res: ServerResponse): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(res.getHeaders())) {
    if (v === undefined) continue
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v)
  }
  return out
}

/**
 * Starts recording every answer of `app` (call before `listen`). Answers are recorded at the HTTP
 * server, so whatever path they take through Fastify (routes, hooks, hijacked replies, not-found
 * handlers) they are seen as the client sees them.
 */
export function recordAnswers(app: FastifyInstance): Observed[] {
  const observed: Observed[] = []
  const forwarder = app.authgate.forwarder
  const forward = forwarder.forward.bind(forwarder)
  forwarder.forward = (request: FastifyRequest, reply: FastifyReply, target) => {
    ;(request.raw as Marked)[FORWARDED] = true
    return forward(request, reply, target)
  }
  app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    tee(res, (body, headers) => {
      observed.push({
        method: req.method ?? 'GET',
        target: req.url ?? '/',
        status: res.statusCode,
        headers,
        body,
        forwarded: (req as Marked)[FORWARDED] === true,
      })
    })
  })
  return observed
}

type Doc = {
  paths: Record<string, Record<string, Operation>>
  components?: Record<string, unknown>
}
type Operation = { responses?: Record<string, ResponseObject>; operationId?: string }
type ResponseObject = {
  headers?: Record<string, { required?: boolean }>
  content?: Record<string, { schema?: unknown }>
}

interface Template {
  path: string
  re: RegExp
  params: number
}

function templates(doc: Doc): Template[] {
  return Object.keys(doc.paths)
    .map((path) => {
      const parts = path.split(/\{[^}]+\}/)
      const re = new RegExp('^' + parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+') + '$')
      return { path, re, params: parts.length - 1 }
    })
    .sort((a, b) => a.params - b.params)
}

/** The operation a request went to: static paths win over templates, as in the router. */
export function findOperation(
  doc: Doc,
  list: Template[],
  method: string,
  target: string,
): { path: string; operation: Operation } | undefined {
  const path = target.split('?')[0]!
  const m = method.toLowerCase()
  for (const t of list) {
    if (!t.re.test(path)) continue
    const operation = doc.paths[t.path]?.[m]
    if (operation) return { path: t.path, operation }
  }
  return undefined
}

function decode(o: Observed): Buffer {
  const encoding = o.headers['content-encoding']
  if (o.body.length === 0) return o.body
  if (encoding === 'gzip') return gunzipSync(o.body)
  if (encoding === 'br') return brotliDecompressSync(o.body)
  if (encoding === 'deflate') return inflateSync(o.body)
  return o.body
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')

export interface DocumentCheck {
  /** Answers judged against an operation. */
  checked: number
  /** Answers outside every operation (unmounted paths and methods, documentation routes). */
  outside: number
  /** `METHOD path status` → how often, for the report. */
  seen: Map<string, number>
  problems: string[]
}

const DOC_ID = 'https://authgate.invalid/openapi.json'

export function checkAnswers(doc: Doc, observed: readonly Observed[]): DocumentCheck {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateFormats: true }))
  ajv.addSchema({ $id: DOC_ID, ...doc } as object)
  const validators = new Map<string, ValidateFunction>()
  const list = templates(doc)
  const result: DocumentCheck = { checked: 0, outside: 0, seen: new Map(), problems: [] }

  for (const o of observed) {
    const found = findOperation(doc, list, o.method, o.target)
    if (!found) {
      result.outside++
      continue
    }
    result.checked++
    const where = `${o.method} ${o.target.split('?')[0]} (${found.path}) → ${o.status}${o.forwarded ? ' from Supabase Auth' : ' from authgate'}`
    const key = `${o.method} ${found.path} ${o.status}`
    result.seen.set(key, (result.seen.get(key) ?? 0) + 1)
    const responses = found.operation.responses ?? {}
    const status = String(o.status)
    const statusKey = [status, `${status[0]}XX`, 'default'].find((k) => responses[k] !== undefined)
    if (statusKey === undefined) {
      result.problems.push(`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`)
      continue
    }
    const response = responses[statusKey]!
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      if (header.required === true && o.headers[name.toLowerCase()] === undefined)
        result.problems.push(`${where}: required header ${name} missing`)
    }
    const body = decode(o)
    if (status === '204' && body.length > 0) result.problems.push(`${where}: 204 with a body`)
    const content = response.content
    if (content === undefined) continue // redirects and empty answers: nothing documented to check
    const type = (o.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (o.method === 'HEAD' || body.length === 0) {
      result.problems.push(`${where}: empty body where the document promises ${Object.keys(content).join(', ')}`)
      continue
    }
    const media = content[type]
    if (media === undefined) {
      result.problems.push(`${where}: content type "${type}" not documented (${Object.keys(content).join(', ')})`)
      continue
    }
    if (media.schema === undefined || !type.includes('json')) continue
    let value: unknown
    try {
      value = JSON.parse(body.toString('utf8'))
    } catch {
      result.problems.push(`${where}: body is not JSON`)
      continue
    }
    const ref = `${DOC_ID}#/${pointer('paths', found.path, o.method.toLowerCase(), 'responses', statusKey, 'content', type, 'schema')}`
    let validate = validators.get(ref)
    if (!validate) {
      validate = ajv.compile({ $ref: ref })
      validators.set(ref, validate)
    }
    if (!validate(value)) {
      const errors = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`)
        .join('; ')
      result.problems.push(
        `${where}: body does not match the schema: ${errors}; body ${body.toString('utf8').slice(0, 300)}`,
      )
    }
  }
  return result
}

/** Totals over the whole run (one process per test file: totals of the file). */
export const totals = { checked: 0, outside: 0, problems: 0 }

/** Judges `observed` against the document `response` (GET /openapi.json); throws with a report on any problem. */
export async function assertDocumented(
  response: { statusCode: number; json(): unknown },
  observed: readonly Observed[],
  label: string,
): Promise<DocumentCheck> {
  if (response.statusCode !== 200)
    throw new Error(`document check (${label}): GET /openapi.json answered ${response.statusCode}`)
  const doc = response.json() as Doc
  const result = checkAnswers(doc, observed)
  totals.checked += result.checked
  totals.outside += result.outside
  totals.problems += result.problems.length
  process.stdout.write(
    `# document check (${label}): ${result.checked} answers judged against ${new Set([...result.seen.keys()].map((k) => k.split(' ').slice(0, 2).join(' '))).size} operations, ${result.outside} outside the document, ${result.problems.length} problems\n`,
  )
  if (result.problems.length > 0) {
    const unique = [...new Set(result.problems)]
    throw new Error(
      `document check (${label}): ${unique.length} answer(s) the document does not describe:\n  ` +
        unique.slice(0, 60).join('\n  '),
    )
  }
  return result
}
