import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { defineRoute, inHeader, inPath, inQuery, withRules, type AuthUser } from 'authgate'

/**
 * An application's own typed routes, next to the mounted auth routes: one declaration per route
 * that Fastify validates with and the OpenAPI document describes. `auth` on a route has authgate
 * verify Supabase Auth's access token before the body is read (signature against the key set,
 * issuer, audience, expiry, the route's role) and hands the claims over as `request.user`; the
 * document states each route's requirement. The store is in memory, one list per user.
 */

export const Todo = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'Todo id' }),
    title: withRules(Type.String({ description: 'What to do' }), { min: 1, max: 200 }),
    done: Type.Boolean({ description: 'Whether it is done' }),
    priority: withRules(Type.Integer({ description: '1 (highest) to 5' }), { min: 1, max: 5, default: 3 }),
    owner_email: withRules(Type.String({ description: 'Who owns it' }), { email: true }),
    link: Type.Optional(withRules(Type.String({ description: 'Related page' }), { url: true })),
    tags: withRules(Type.Array(Type.String({ description: 'A label' }), { description: 'Labels' }), { max: 10 }),
    created_at: Type.String({ format: 'date-time', description: 'Creation time' }),
  },
  { title: 'Todo', description: 'A thing to do' },
)
export type Todo = Static<typeof Todo>

export const NewTodo = Type.Object(
  {
    title: withRules(Type.String({ description: 'What to do', examples: ['Water the plants'] }), { min: 1, max: 200 }),
    priority: Type.Optional(
      withRules(Type.Integer({ description: '1 (highest) to 5' }), { min: 1, max: 5, default: 3 }),
    ),
    owner_email: withRules(Type.String({ description: 'Who owns it' }), { email: true }),
    link: Type.Optional(withRules(Type.String({ description: 'Related page' }), { url: true })),
    tags: Type.Optional(withRules(Type.Array(Type.String()), { max: 10 })),
  },
  { title: 'NewTodo', description: 'Fields of a new todo', additionalProperties: false },
)

const TodoId = inPath(Type.String({ format: 'uuid', description: 'Todo id' }))

const UpdateTodo = Type.Object(
  {
    id: TodoId,
    'if-match': inHeader(
      Type.Optional(
        Type.String({ description: 'Only update when the todo is still at this version', examples: ['"3"'] }),
      ),
    ),
    title: Type.Optional(withRules(Type.String({ description: 'What to do' }), { min: 1, max: 200 })),
    done: Type.Optional(Type.Boolean({ description: 'Whether it is done' })),
    code: withRules(Type.Optional(Type.String({ description: 'A six-digit confirmation code' })), { len: 6 }),
  },
  { title: 'UpdateTodo' },
)

export const TODO_TAGS = [{ name: 'Todos', description: 'The example application: a to-do list per user' }]

/** The signed-in user of a route with `auth: 'required'` (the hook answered 401 without one). */
function userOf(request: FastifyRequest): AuthUser {
  return request.user!
}

export function registerTodoRoutes(app: FastifyInstance): void {
  // Each user's todos, by the token's `sub` (Supabase Auth's user id).
  const lists = new Map<string, Map<string, Todo>>()
  const todosOf = (request: FastifyRequest) => {
    const sub = userOf(request).sub
    let list = lists.get(sub)
    if (!list) lists.set(sub, (list = new Map()))
    return list
  }
  const everyTodo = () => [...lists.values()].flatMap((list) => [...list.values()])
  const notFound = { code: 404, error_code: 'not_found', msg: 'No such todo' }

  app.route(
    defineRoute({
      method: 'GET',
      url: '/todos',
      tags: ['Todos'],
      summary: 'List todos',
      description: 'Newest first, at most `limit` of them.',
      request: Type.Object({
        limit: inQuery(
          Type.Optional(
            withRules(Type.Integer({ description: 'How many to return' }), { min: 1, max: 100, default: 20 }),
          ),
        ),
        done: inQuery(Type.Optional(Type.Boolean({ description: 'Only done (true) or open (false) todos' }))),
        'x-request-id': inHeader(Type.Optional(Type.String({ description: 'Echoed in the logs', format: 'uuid' }))),
      }),
      response: Type.Array(Todo),
      auth: 'required',
      handler: async (request) => {
        const { limit = 20, done } = request.query
        return [...todosOf(request).values()]
          .filter((t) => done === undefined || t.done === done)
          .sort((a, b) => b.created_at.localeCompare(a.created_at))
          .slice(0, limit)
      },
    }),
  )

  app.route(
    defineRoute({
      method: 'GET',
      url: '/todos/:id',
      tags: ['Todos'],
      summary: 'Get a todo',
      description: 'One todo by its id.',
      request: Type.Object({ id: TodoId }),
      response: Todo,
      responses: [{ status: 404, description: 'No such todo', example: notFound }],
      auth: 'required',
      handler: async (request, reply) => todosOf(request).get(request.params.id) ?? reply.code(404).send(notFound),
    }),
  )

  app.route(
    defineRoute({
      method: 'POST',
      url: '/todos',
      tags: ['Todos'],
      summary: 'Create a todo',
      description: 'Priority defaults to 3; the new todo is open.',
      body: NewTodo,
      response: Todo,
      status: 201,
      auth: 'required',
      handler: async (request, reply) => {
        const b = request.body
        const todo: Todo = {
          id: randomUUID(),
          title: b.title,
          done: false,
          priority: b.priority ?? 3,
          owner_email: b.owner_email,
          ...(b.link ? { link: b.link } : {}),
          tags: b.tags ?? [],
          created_at: new Date().toISOString(),
        }
        todosOf(request).set(todo.id, todo)
        return reply.code(201).send(todo)
      },
    }),
  )

  app.route(
    defineRoute({
      method: 'PATCH',
      url: '/todos/:id',
      tags: ['Todos'],
      summary: 'Update a todo',
      description: 'Changes the title or the done flag. The `code` field shows the `len` rule: exactly six characters.',
      request: UpdateTodo,
      response: Todo,
      responses: [{ status: 404, description: 'No such todo', example: notFound }],
      auth: 'required',
      handler: async (request, reply) => {
        const todo = todosOf(request).get(request.params.id)
        if (!todo) return reply.code(404).send(notFound)
        if (request.body.title !== undefined) todo.title = request.body.title
        if (request.body.done !== undefined) todo.done = request.body.done
        return todo
      },
    }),
  )

  app.route(
    defineRoute({
      method: 'DELETE',
      url: '/todos/:id',
      tags: ['Todos'],
      summary: 'Delete a todo',
      description: 'Deleting a todo that does not exist succeeds too.',
      request: Type.Object({ id: TodoId }),
      responses: [{ status: 204, description: 'Deleted' }],
      auth: 'required',
      handler: async (request, reply) => {
        todosOf(request).delete(request.params.id)
        return reply.code(204).send()
      },
    }),
  )

  app.route(
    defineRoute({
      method: 'GET',
      url: '/todos/:id/share',
      tags: ['Todos'],
      summary: 'Share link of a todo',
      description: 'An explicit response documented by its example alone.',
      request: Type.Object({ id: TodoId }),
      responses: [
        {
          status: 200,
          description: 'A link anyone can open',
          example: { url: 'https://todo.example.com/s/abc123', expires_in: 86400 },
        },
      ],
      auth: 'required',
      handler: async (request) => ({
        url: `https://todo.example.com/s/${request.params.id.slice(0, 6)}`,
        expires_in: 86400,
      }),
    }),
  )

  app.route(
    defineRoute({
      method: 'GET',
      url: '/admin/todo-stats',
      tags: ['Todos', 'Admin'],
      summary: 'Counts over all users',
      description: 'Only for the service role (a token signed with the project secret), over every user.',
      response: Type.Object(
        { total: Type.Integer({ minimum: 0 }), done: Type.Integer({ minimum: 0 }) },
        { title: 'TodoStats' },
      ),
      auth: { role: 'service_role' },
      handler: async () => {
        const all = everyTodo()
        return { total: all.length, done: all.filter((t) => t.done).length }
      },
    }),
  )

  app.route(
    defineRoute({
      method: 'GET',
      url: '/status',
      tags: ['Public'],
      summary: 'Liveness of the example application',
      description: 'Tagged `Public`: no credentials, no 401.',
      response: Type.Object({ ok: Type.Boolean() }, { title: 'Status' }),
      handler: async () => ({ ok: true }),
    }),
  )

  app.route(
    defineRoute({
      method: 'POST',
      url: '/hooks/todo-events',
      tags: ['Todos'],
      summary: 'Receive an event from another service',
      description: 'Authenticated with an API key in `X-API-Key` instead of a user token.',
      security: [{ apiKey: [] }],
      request: Type.Object({
        event: Type.String({ enum: ['created', 'deleted'], description: 'What happened' }),
        todo_id: Type.String({ format: 'uuid' }),
        dry_run: inQuery(Type.Optional(Type.Boolean({ description: 'Validate only' }))),
      }),
      responses: [{ status: 202, description: 'Accepted for processing' }],
      handler: async (_request, reply) => reply.code(202).send(),
    }),
  )
}

/** What the example adds to the document's options: its tag and its API-key scheme. */
export const TODO_OPENAPI = {
  info: {
    title: 'Todo API with authgate',
    version: '1.0.0',
    description: 'An example application: Supabase Auth behind authgate, plus the application’s own routes.',
    contact: { name: 'Example team', email: 'team@example.com' },
    license: { name: 'MIT', identifier: 'MIT' },
  },
  tags: TODO_TAGS,
  securitySchemes: {
    apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Key for service-to-service calls' },
  },
}
