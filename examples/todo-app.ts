import type { FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from 'authgate'
import { TODO_OPENAPI, registerTodoRoutes } from './todo-routes.ts'

/**
 * An application using authgate as a library: Supabase Auth mounted under /auth, its own typed
 * routes beside it behind Supabase Auth's access tokens, one OpenAPI document and one reference
 * page for both. With the development stack (`npm run dev`: Supabase Auth on port 9999, tokens
 * issued as http://localhost:8080/auth/v1, where that stack mounts Auth for supabase-js):
 *
 *   AUTHGATE_BACKEND_URL=http://localhost:9999 node --conditions=authgate-source examples/todo-app.ts
 *   open http://127.0.0.1:3000/docs
 *
 * `authgate` here is the package itself (package.json `exports`): an installed copy resolves to its
 * compiled dist/, and in this repository the `authgate-source` condition resolves to src/.
 */
export type TodoAppOptions = AuthgateOptions

/** The issuer of the development stack's tokens (its GOTRUE_JWT_ISSUER), unless JWT_ISSUER says otherwise. */
export const DEV_ISSUER = 'http://localhost:8080/auth/v1'

export async function buildTodoApp(options: TodoAppOptions = {}): Promise<FastifyInstance> {
  const app = await buildApp({
    ...options,
    openapi: { ...TODO_OPENAPI, ...options.openapi },
    // Tokens are checked against the key set Supabase Auth publishes (fetched through authgate's
    // own connection to it) and must name this issuer: what Supabase Auth's GOTRUE_JWT_ISSUER is.
    protect: options.protect ?? { issuer: DEV_ISSUER },
  })
  // Registered after buildApp (and after the documentation routes): the registry still sees them.
  registerTodoRoutes(app)
  return app
}

if (import.meta.main) {
  const backend = process.env.AUTHGATE_BACKEND_URL
  const app = await buildTodoApp({
    logger: true,
    ...(backend ? { config: { backendUrl: new URL(backend) } } : {}),
    protect: { issuer: process.env.JWT_ISSUER ?? DEV_ISSUER },
  })
  const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
  process.stdout.write(`todo app listening on ${address}\n`)
  const stop = () => void app.close().then(() => process.exit(0))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
