import type { FastifyInstance } from 'fastify'
import { loadTodoApp } from '../../support/examples.ts'

/**
 * The product as an application uses it: `buildApp` (the real auth route table under `/auth`,
 * the default rate limits, so 429 is documented on the nine limited routes, the documentation
 * routes) plus the example application's own routes. Nothing is forwarded: the backend address
 * is a closed port and no test here calls an auth route.
 */
export async function realisticApp(): Promise<FastifyInstance> {
  const { buildTodoApp } = await loadTodoApp()
  const app = await buildTodoApp({ config: { backendUrl: new URL('http://127.0.0.1:9') } })
  await app.ready()
  return app
}

export async function realisticDocuments(): Promise<{ v31: Record<string, any>; v30: Record<string, any> }> {
  const app = await realisticApp()
  try {
    const v31 = (await app.inject('/openapi.json')).json()
    const v30 = (await app.inject('/openapi-3.0.json')).json()
    return { v31, v30 }
  } finally {
    await app.close()
  }
}
