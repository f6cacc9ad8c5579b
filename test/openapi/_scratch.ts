import Fastify from 'fastify'
import { Type } from 'typebox'
import { createRegistry } from '../../src/openapi/registry.ts'
import { buildOpenApiDocument } from '../../src/openapi/document.ts'
const app = Fastify()
const reg = createRegistry(app)
const Item = Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String({ minLength: 1 }), created_at: Type.String({ format: 'date-time' }), owner_email: Type.String() }, { title: 'Item' })
app.get('/items', { schema: { tags: ['Items'], summary: 'List', querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })), q: Type.String() }), response: { 200: Type.Array(Item) } } }, async () => [])
app.get('/items/:id', { schema: { tags: ['Items'], params: Type.Object({ id: Type.String({ description: 'Item id' }) }), response: { 200: { description: 'The item', ...Item } } } }, async () => ({}))
app.post('/items', { schema: { tags: ['Public'], body: Item, response: { 201: { description: 'Created', example: { id: 'x', n: 1 } } } } }, async () => ({}))
app.register(async (child) => { child.delete('/:id', { schema: { tags: ['Admin'] } }, async () => ({})) }, { prefix: '/things' })
await app.ready()
console.log(JSON.stringify(buildOpenApiDocument(reg.entries()), null, 1))
