import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { postgrestSwagger } from '../../../e2e/support/service-stand-ins.ts'
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

/**
 * The documents of the realistic application with the REST service beside Auth: PostgREST's
 * description (the stand-in's, in PostgREST's own shape) merged in, so the linters read it too.
 */
export async function realisticDocuments(): Promise<{ v31: Record<string, any>; v30: Record<string, any> }> {
  const postgrest = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/openapi+json; charset=utf-8' })
    res.end(JSON.stringify(postgrestSwagger()))
  })
  await new Promise<void>((resolve) => postgrest.listen(0, '127.0.0.1', resolve))
  const { buildTodoApp } = await loadTodoApp()
  const app = await buildTodoApp({
    config: { backendUrl: new URL('http://127.0.0.1:9') },
    services: {
      urls: { rest: `http://127.0.0.1:${(postgrest.address() as AddressInfo).port}` },
      keys: { anon: 'anon.jwt', service: 'service.jwt' },
    },
  })
  try {
    await app.ready()
    const v31 = (await app.inject('/openapi.json')).json()
    const v30 = (await app.inject('/openapi-3.0.json')).json()
    if (v31.paths['/rest/v1/todos'] === undefined) throw new Error("PostgREST's description is not in the document")
    return { v31, v30 }
  } finally {
    await app.close()
    postgrest.close()
  }
}
