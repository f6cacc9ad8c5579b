import type { FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from '../src/app.ts'
import type { RegisterDocsOptions } from '../src/docs-server/index.ts'
import { TODO_OPENAPI, registerTodoRoutes } from './todo-routes.ts'

/**
 * An application using authgate as a library: Supabase Auth mounted under /auth, its own typed
 * routes beside it, one OpenAPI document and one reference page for both.
 *
 *   AUTHGATE_BACKEND_URL=http://localhost:9999 node examples/todo-app.ts
 *   open http://127.0.0.1:3000/docs
 */
export type TodoAppOptions = AuthgateOptions & { openapi?: RegisterDocsOptions }

export async function buildTodoApp(options: TodoAppOptions = {}): Promise<FastifyInstance> {
  const withDocs: TodoAppOptions = { ...options, openapi: { ...TODO_OPENAPI, ...options.openapi } }
  const app = await buildApp(withDocs)
  // Registered after buildApp (and after the documentation routes): the registry still sees them.
  registerTodoRoutes(app)
  return app
}

if (import.meta.main) {
  const backend = process.env.AUTHGATE_BACKEND_URL
  const app = await buildTodoApp({ logger: true, ...(backend ? { config: { backendUrl: new URL(backend) } } : {}) })
  const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
  process.stdout.write(`todo app listening on ${address}\n`)
  const stop = () => void app.close().then(() => process.exit(0))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
