/**
 * Type tests for `defineRoute`'s inference, checked by `npm run typecheck` (never run): the request
 * parts are inferred from the TypeBox schemas, the reply is checked against the response types, and
 * each `@ts-expect-error` line is a misuse that must stay an error (if it compiled, the directive
 * itself would fail the check).
 */
import { Type } from 'typebox'
import { defineRoute, inForm, inHeader, inPath, inQuery } from '../../src/routes-dsl/index.ts'

type IsAny<T> = 0 extends 1 & T ? true : false
/** True when A and B accept exactly the same values (and neither is `any`). */
type Same<A, B> =
  IsAny<A> extends true
    ? false
    : IsAny<B> extends true
      ? false
      : [A] extends [B]
        ? [B] extends [A]
          ? true
          : false
        : false
function expectType<A, B>(..._proof: Same<A, B> extends true ? [] : [never]): void {}

const Item = Type.Object({ id: Type.String(), name: Type.String(), done: Type.Boolean() })

export function singleRequestType() {
  return defineRoute({
    method: 'PUT',
    url: '/items/:id',
    request: Type.Object({
      id: inPath(Type.String()),
      limit: inQuery(Type.Optional(Type.Integer())),
      'x-tenant': inHeader(Type.String()),
      name: Type.String(),
      note: Type.Optional(Type.String()),
    }),
    response: Item,
    handler: async (request) => {
      expectType<typeof request.params, { id: string }>()
      expectType<typeof request.query, { limit?: number }>()
      expectType<typeof request.body, { name: string; note?: string }>()
      const tenant: string = request.headers['x-tenant']
      // @ts-expect-error a path field is not in the body
      void request.body.id
      // @ts-expect-error a body field is not a path parameter
      void request.params.name
      // @ts-expect-error the query field is a number
      const limit: string | undefined = request.query.limit
      void limit
      return { id: request.params.id, name: `${tenant}:${request.body.name}`, done: false }
    },
  })
}

export function formFields() {
  return defineRoute({
    method: 'POST',
    url: '/login',
    request: Type.Object({ username: inForm(Type.String()), password: inForm(Type.String()) }),
    handler: async (request) => {
      expectType<typeof request.body, { username: string; password: string }>()
      return request.body.username
    },
  })
}

export function separateSchemas() {
  return defineRoute({
    method: 'POST',
    url: '/lists/:listId/items',
    params: Type.Object({ listId: Type.String() }),
    querystring: Type.Object({ dry: Type.Optional(Type.Boolean()) }),
    body: Type.Object({ name: Type.String() }),
    response: Item,
    status: 201,
    handler: async (request, reply) => {
      expectType<typeof request.params, { listId: string }>()
      expectType<typeof request.query, { dry?: boolean }>()
      expectType<typeof request.body, { name: string }>()
      return reply.code(201).send({ id: '1', name: request.body.name, done: false })
    },
  })
}

export function replyChecked() {
  defineRoute({
    method: 'GET',
    url: '/items/:id',
    request: Type.Object({ id: inPath(Type.String()) }),
    response: Item,
    // @ts-expect-error the handler's result must be an Item
    handler: async () => ({ id: '1', name: 'x' }),
  })
  defineRoute({
    method: 'GET',
    url: '/items/:id',
    response: Item,
    handler: async (_request, reply) => {
      // @ts-expect-error what is sent must be an Item
      return reply.send({ id: 1, name: 'x', done: false })
    },
  })
}

export function explicitResponses() {
  return defineRoute({
    method: 'GET',
    url: '/items/:id',
    response: Item,
    responses: [{ status: 404, description: 'No such item', schema: Type.Object({ msg: Type.String() }) }],
    handler: async (_request, reply) => {
      // The explicit response's type is an allowed reply too.
      if (Math.random() > 0.5) return reply.code(404).send({ msg: 'not found' })
      return { id: '1', name: 'x', done: true }
    },
  })
}

export function noResponseDeclared() {
  // Without a response type the reply is not constrained.
  return defineRoute({ method: 'GET', url: '/free', handler: async () => ({ anything: [1, 'two'] }) })
}

export function misuses() {
  // @ts-expect-error the success status is a number
  defineRoute({ method: 'GET', url: '/x', response: Item, status: '201', handler: async () => 'x' })
  // @ts-expect-error `auth` is 'required', 'optional' or a requirement
  defineRoute({ method: 'GET', url: '/x', auth: 'sometimes', handler: async () => 'x' })
  // @ts-expect-error aal is aal1, aal2 or aal3
  defineRoute({ method: 'GET', url: '/x', auth: { aal: 'aal9' }, handler: async () => 'x' })
  // @ts-expect-error the handler is required
  defineRoute({ method: 'GET', url: '/x' })
  defineRoute({
    method: 'GET',
    url: '/x',
    querystring: Type.Object({ page: Type.Integer() }),
    handler: async (request) => {
      // @ts-expect-error no such query parameter
      return request.query.pages
    },
  })
}
