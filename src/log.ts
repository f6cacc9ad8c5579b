import type { FastifyRequest } from 'fastify'
import { redactUrl } from './observability/redact.ts'
import { clientIp } from './proxy/client-ip.ts'

/**
 * Requests in log lines (Fastify's error lines): the query is kept with its secrets redacted —
 * `/verify?token=…`, `/callback?code=…` carry one-time secrets.
 */
export function requestSerializer(req: FastifyRequest) {
  return {
    method: req.method,
    url: redactUrl(req.url ?? ''),
    remoteAddress: clientIp(req),
  }
}
