import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * Fastify's request logging, less the lines src/observability/request-log.ts replaces: no
 * "incoming request" / "request completed" pair and no "not found" line (the request's one line
 * says all that); errors of the default error handler are still logged, but only server errors
 * (a 4xx is in the request line with its code and reason).
 */
export class AuthgateLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, _request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ err: error }, 'request errored')
  }

  override routeNotFound(): void {}

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (reply.statusCode >= 500) super.defaultErrorLog(error, request, reply)
  }
}
