import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * Fastify's request logging, less the lines src/observability/request-log.ts replaces: no
 * "incoming request" / "request completed" pair and no "not found" line (the request's one line
 * says all that); errors of the default error handler are still logged, but only server errors
 * (a 4xx is in the request line with its code and reason).
 */
export class AuthgateLogController extends LogController implements ResponseCompletion {
  readonly #completed: ((request: FastifyRequest, reply: FastifyReply) => void)[] = []
  #incoming: ((request: FastifyRequest, reply: FastifyReply) => void) | undefined

  /**
   * What runs on each request Fastify has routed (a 404 too), before its `onRequest` hooks: in place
   * of a global `onRequest` hook, for which Fastify makes a hook runner per request (three closures
   * and their context, about 0.25 KB) when it is a route's only one (docs/decisions.md, D171). One
   * observer; it may answer, and then must leave the reply sent (`sent` true) so that nothing after
   * it runs.
   */
  onIncoming(observer: (request: FastifyRequest, reply: FastifyReply) => void): void {
    if (this.#incoming !== undefined) throw new Error('onIncoming is set already')
    this.#incoming = observer
  }

  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    // Fastify's answers to a target it cannot route (a malformed escape, a parameter too long) come
    // with no parameters: no route was found and no `onRequest` hook runs for them; nor does this.
    if (this.#incoming !== undefined && request.params !== null) this.#incoming(request, reply)
  }

  /** Adds what runs when each response is finished, in the order added (see `ResponseCompletion`). */
  onCompleted(observer: (request: FastifyRequest, reply: FastifyReply) => void): void {
    this.#completed.push(observer)
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    for (const observer of this.#completed) observer(request, reply)
    if (error) reply.log.error({ err: error }, 'request errored')
  }

  override routeNotFound(): void {}

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (reply.statusCode >= 500) super.defaultErrorLog(error, request, reply)
  }
}

/**
 * Where the service's per-response work (the request metrics, the request's log line) runs, in
 * place of `onResponse` hooks. Fastify calls its log controller's `requestCompleted` when each
 * response is finished, after the `onResponse` hooks, and runs those hooks through a runner it
 * makes per response (three closures, about 0.25 KB): with no `onResponse` hook left it makes
 * none. Only where Fastify has a logger: without one it calls `requestCompleted` only for routes
 * that have `onResponse` hooks, so the hooks stay.
 */
export interface ResponseCompletion {
  onCompleted(observer: (request: FastifyRequest, reply: FastifyReply) => void): void
}
