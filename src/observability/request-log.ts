import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import pino from 'pino'
import { clientIp } from '../proxy/client-ip.ts'
import { backendOf } from '../core/backend-timing.ts'
import { redactUrl } from './redact.ts'
import { routeUrl } from './route-url.ts'
import type { ResponseCompletion } from './log-controller.ts'

/** The reason of one of authgate's own errors, from the body `sendError` wrote; never a body excerpt. */
function errorReason(code: string, payload: unknown): string | undefined {
  // sendError writes a Buffer (see src/errors.ts); other error answers may be strings.
  const text = Buffer.isBuffer(payload) ? payload : typeof payload === 'string' ? payload : undefined
  if (text === undefined || text.length > 4096) return undefined
  let message: unknown
  try {
    const body = JSON.parse(text.toString()) as { msg?: unknown; message?: unknown }
    message = body.msg ?? body.message
  } catch {
    return undefined
  }
  if (typeof message !== 'string') return undefined
  // "Could not parse request body as JSON: Unexpected token … \"{password: …\"": keep the first clause.
  if (code === 'bad_json') return message.split(': ')[0]
  return message.slice(0, 500)
}

const LEVELS: Record<string, number> = pino.levels.values
/** Whether `log` writes lines at `level` (`silent`, or a logger turned off, writes none). */
const enabled = (log: FastifyBaseLogger, level: string) => (LEVELS[level] ?? 0) >= (LEVELS[log.level] ?? Infinity)

const levelOfStatus = (status: number) => (status >= 500 ? 'warn' : 'info')
const pathOf = (url: string) => {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * Whether an answer of `status` written without Fastify gets a line at the logger's level now:
 * asked before the line's fields are gathered, so a flood of early 429s at the usual level builds
 * nothing for a line never written.
 */
export const writesEarlyLine = (log: FastifyBaseLogger, status: number): boolean => enabled(log, levelOfStatus(status))

/**
 * The line of a request answered without Fastify (src/http/early-refusal.ts), as the hook below
 * writes it for the same answer through Fastify: same fields, in the same order, `reqId` first as
 * Fastify's request logger binds it.
 */
export function logEarlyAnswer(
  log: FastifyBaseLogger,
  req: IncomingMessage,
  answer: {
    reqId: string
    method: string
    route: string
    status: number
    durationMs: number
    ip: string
    code: string | undefined
    body: string
  },
): void {
  const level = levelOfStatus(answer.status)
  // Before anything is read of the request: at the usual level the early 429 writes no line.
  if (!enabled(log, level)) return
  const line: Record<string, unknown> = {
    reqId: answer.reqId,
    method: answer.method,
    route: answer.route,
    url: redactUrl(req.url ?? ''),
    status: answer.status,
    durationMs: round(answer.durationMs),
    ip: answer.ip,
  }
  if (answer.code !== undefined) {
    line.error = answer.code
    const reason = errorReason(answer.code, answer.body)
    if (reason !== undefined) line.reason = reason
  }
  const userAgent = req.headers['user-agent']
  if (userAgent !== undefined) line.userAgent = userAgent.slice(0, 200)
  log[level](line, 'request')
}

const kReason = Symbol('authgate.errorReason')
type WithReason = FastifyRequest & { [kReason]?: string }

export interface RequestLogOptions {
  /** Paths logged at debug level (probes, scrapes): they would drown the rest. */
  quietPaths?: ReadonlySet<string>
  /** Where the line is written when each response is finished instead of an `onResponse` hook (src/observability/log-controller.ts). */
  completion?: ResponseCompletion | undefined
}

/**
 * One line per request, written when the response is finished: method, route template, the URL with
 * secrets redacted, status, total and backend durations, client IP, request id (the line's `reqId`),
 * and for authgate's own errors their code and reason. Replaces Fastify's two lines (which need
 * `disableRequestLogging`).
 */
export function registerRequestLog(app: FastifyInstance, options: RequestLogOptions = {}): void {
  const quiet = options.quietPaths ?? new Set()
  // The level a request's line is written at; nothing is built for a line the logger would drop
  // (the bench runs at `warn`, and a flood of 429s must cost no more than deciding and answering).
  // The level of the line, or undefined when the logger would drop it. A quiet path's line is
  // written at `debug`, below its status's level: where the status's level is off, the path is not
  // read (at `warn`, the bench's level and a flood's, nothing of the request is).
  const levelOf = (log: FastifyBaseLogger, url: string, status: number): 'debug' | 'info' | 'warn' | undefined => {
    const level = levelOfStatus(status)
    if (!enabled(log, level)) return undefined
    if (!quiet.has(pathOf(url))) return level
    return enabled(log, 'debug') ? 'debug' : undefined
  }
  // Callback-style hooks: Fastify runs them without a promise and a microtask per request.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
    if (levelOf(request.log, request.raw.url ?? '', reply.statusCode) === undefined) return done(null, payload)
    const code = reply.getHeader('x-sb-error-code')
    if (typeof code === 'string') {
      const reason = errorReason(code, payload)
      if (reason !== undefined) (request as WithReason)[kReason] = reason
    }
    done(null, payload)
  })
  if (options.completion !== undefined) options.completion.onCompleted(writeLine)
  else
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
      writeLine(request, reply)
      done()
    })
  function writeLine(request: FastifyRequest, reply: FastifyReply): void {
    const url = request.raw.url ?? ''
    const status = reply.statusCode
    const level = levelOf(request.log, url, status)
    if (level === undefined) return
    const backend = backendOf(request)
    const code = reply.getHeader('x-sb-error-code')
    const line: Record<string, unknown> = {
      method: request.method,
      route: routeUrl(request) ?? null,
      url: redactUrl(url),
      status,
      durationMs: round(reply.elapsedTime),
      ip: clientIp(request),
    }
    if (backend !== undefined) {
      line.backendMs = round(backend.durationMs)
      if (backend.status !== undefined) line.backendStatus = backend.status
      if (backend.error !== undefined) line.backendError = backend.error
    }
    if (typeof code === 'string' && reply.hasHeader('x-sb-error-code')) {
      line.error = code
      const reason = (request as WithReason)[kReason]
      if (reason !== undefined) line.reason = reason
    }
    const ua = request.headers['user-agent']
    if (ua !== undefined) line.userAgent = ua.slice(0, 200)
    request.log[level](line, 'request')
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10
}
