import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/**
 * One query reader: a decision authgate makes on a query string is made on the query as Supabase
 * Auth reads it (Go's `ParseQuery`, src/core/go-values.ts), never on another reader's idea of it
 * (`URLSearchParams` keeps a pair holding `;` or a bad `%` escape, which Go drops). This test
 * reads every source under src/ with TypeScript's parser and finds each place that reads a query
 * otherwise:
 *
 * - `new URLSearchParams(text)`: parsing a string (built from a record or empty, it only writes);
 * - `url.searchParams` read (`.set`, `.append`, `.delete`, `.sort` only build a URL);
 * - `request.query` / `req.query` read (Fastify's parsed query; a write is the reader setting it);
 * - a query-string module imported (`querystring`, `qs`, `fast-querystring`, `query-string`);
 * - a hand-written pair splitter, `.split('&')`.
 *
 * Each place found must be in the list below, by file, enclosing function and kind, with why it is
 * no decision on a query Supabase Auth also reads; a new place fails until it is listed or changed
 * to the Go reader, and a listed place that no longer exists fails too (the list stays true).
 */

type Kind = 'URLSearchParams(text)' | 'searchParams read' | 'request.query read' | 'query module' | "split('&')"

interface Use {
  file: string
  /** The nearest named function, method or variable around it (`<module>` at the top). */
  where: string
  kind: Kind
  line: number
}

const ALLOWED: ReadonlyArray<{ file: string; where: string; kind: Kind; why: string }> = [
  {
    file: 'core/go-values.ts',
    where: 'backendPairs',
    kind: "split('&')",
    why: 'the Go reader itself: pairs split on `&` only, as ParseQuery splits them',
  },
  {
    file: 'auth/query.ts',
    where: 'checkQuery',
    kind: 'request.query read',
    why: "a mounted route's query: request.query is set by readQueryAsBackend (the Go reader), the first preValidation hook",
  },
  {
    file: 'auth/query-requirements.ts',
    where: 'checkQueryRequirements',
    kind: 'request.query read',
    why: 'a preHandler of a mounted route: request.query is the Go reader’s by then',
  },
  {
    file: 'ratelimit/limiter.ts',
    where: 'abuseLimit',
    kind: 'request.query read',
    why: 'the per-account limit’s grant_type on a mounted route, read after the body (a preHandler): the Go reader’s request.query',
  },
  {
    file: 'auth/body.ts',
    where: 'bodyReader',
    kind: 'request.query read',
    why: "a form body's fallback to the query (Go's FormValue), read in a preValidation hook of a mounted route: the Go reader's request.query",
  },
  {
    file: 'plugin.ts',
    where: 'authErrorHandler',
    kind: 'request.query read',
    why: 'a body validation error of a mounted route: raised after the preValidation hooks, so request.query is the Go reader’s',
  },
  {
    file: 'sessions/gate.ts',
    where: '#signOut',
    kind: 'request.query read',
    why: "/logout's scope, read in the rewrite of the forwarded answer of a mounted route: the Go reader's request.query",
  },
  {
    file: 'auth/consent-page/index.ts',
    where: 'get',
    kind: 'request.query read',
    why: "authgate's own consent page reads its own link's authorization_id (Fastify's parser: a repeated name is an array, refused); no backend reads this query, the id goes on in a path authgate builds",
  },
  {
    file: 'sessions/answer.ts',
    where: 'splitSessionRedirect',
    kind: 'URLSearchParams(text)',
    why: "a redirect's fragment (`#access_token=…`), which no server reads: supabase-js reads it in the page with URLSearchParams",
  },
  {
    file: 'sessions/gate.ts',
    where: '#issueRedirect',
    kind: 'URLSearchParams(text)',
    why: 'the same fragment, written back with stand-ins for supabase-js to read as it reads it',
  },
  {
    file: 'services/keys.ts',
    where: 'queryKey',
    kind: "split('&')",
    why: "a service's `apikey` (PostgREST, Storage, Realtime), not a query Supabase Auth reads; every pair named apikey is replaced by withQueryKey",
  },
  {
    file: 'services/keys.ts',
    where: 'withQueryKey',
    kind: "split('&')",
    why: "rewrites a service's apikey pairs, keeping the others' bytes",
  },
  {
    file: 'observability/redact.ts',
    where: 'redactQuery',
    kind: "split('&')",
    why: 'what a log line hides, not what a request gets: it hides by name whatever the spelling',
  },
]

const SRC = fileURLToPath(new URL('../src/', import.meta.url))
const QUERY_MODULES = new Set(['querystring', 'node:querystring', 'qs', 'query-string', 'fast-querystring'])
const BUILDERS = new Set(['set', 'append', 'delete', 'sort'])
const REQUEST = /^(request|req)$/i

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

function nameOf(node: ts.Node): string | undefined {
  if (
    (ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isPropertyDeclaration(node)) &&
    node.name !== undefined
  )
    return node.name.getText()
  const fn = (init: ts.Node | undefined) =>
    init !== undefined && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))
  if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && fn(node.initializer)) return node.name.text
  if (ts.isPropertyAssignment(node) && fn(node.initializer)) return node.name.getText()
  return undefined
}

function enclosing(node: ts.Node): string {
  for (let n = node.parent; n !== undefined; n = n.parent) {
    const name = nameOf(n)
    if (name !== undefined) return name
  }
  return '<module>'
}

/** The last name of a chain (`request`, `this.request` → `request`). */
function tail(expr: ts.Expression): string | undefined {
  if (ts.isIdentifier(expr)) return expr.text
  if (ts.isPropertyAccessExpression(expr)) return expr.name.text
  if (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr)) return tail(expr.expression)
  return undefined
}

const isWrite = (node: ts.Node) =>
  ts.isBinaryExpression(node.parent) &&
  node.parent.left === node &&
  node.parent.operatorToken.kind === ts.SyntaxKind.EqualsToken

/** Every place in one source that reads a query with something else than the Go reader. */
export function queryReads(file: string, text: string): Use[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: Use[] = []
  const add = (node: ts.Node, kind: Kind) =>
    out.push({
      file,
      where: enclosing(node),
      kind,
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
    })
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'URLSearchParams') {
      const arg = node.arguments?.[0]
      if (arg !== undefined && !ts.isObjectLiteralExpression(arg) && !ts.isArrayLiteralExpression(arg))
        add(node, 'URLSearchParams(text)')
    }
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'searchParams') {
      const use = node.parent
      const builds =
        ts.isPropertyAccessExpression(use) &&
        BUILDERS.has(use.name.text) &&
        ts.isCallExpression(use.parent) &&
        use.parent.expression === use
      if (!builds) add(node, 'searchParams read')
    }
    const queryAccess =
      (ts.isPropertyAccessExpression(node) && node.name.text === 'query') ||
      (ts.isElementAccessExpression(node) &&
        ts.isStringLiteralLike(node.argumentExpression) &&
        node.argumentExpression.text === 'query')
    if (queryAccess && REQUEST.test(tail(node.expression) ?? '') && !isWrite(node)) add(node, 'request.query read')
    if (
      ts.isVariableDeclaration(node) &&
      ts.isObjectBindingPattern(node.name) &&
      node.initializer !== undefined &&
      REQUEST.test(tail(node.initializer) ?? '') &&
      node.name.elements.some((e) => (e.propertyName ?? e.name).getText() === 'query')
    )
      add(node, 'request.query read')
    const specifier =
      ts.isImportDeclaration(node) || ts.isExportDeclaration(node)
        ? node.moduleSpecifier
        : ts.isCallExpression(node) &&
            (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
              (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
          ? node.arguments[0]
          : undefined
    if (specifier !== undefined && ts.isStringLiteralLike(specifier) && QUERY_MODULES.has(specifier.text))
      add(node, 'query module')
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'split' &&
      node.arguments.length >= 1 &&
      ts.isStringLiteralLike(node.arguments[0]!) &&
      node.arguments[0].text === '&'
    )
      add(node, "split('&')")
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

const key = (u: { file: string; where: string; kind: Kind }) => `${u.file} ${u.where} ${u.kind}`

describe('one query reader', () => {
  test('every query read under src/ is the Go reader, or listed here with why it is not a decision on one', () => {
    const found = sources(SRC).flatMap((path) => queryReads(relative(SRC, path), readFileSync(path, 'utf8')))
    const allowed = new Set(ALLOWED.map(key))
    const unlisted = found
      .filter((u) => !allowed.has(key(u)))
      .map((u) => `src/${u.file}:${u.line} (${u.where}): ${u.kind}`)
    assert.deepEqual(unlisted, [], 'read the query with src/core/go-values.ts, or list the use here with its reason')
    const seen = new Set(found.map(key))
    assert.deepEqual(
      ALLOWED.filter((a) => !seen.has(key(a))).map(key),
      [],
      'listed uses that no longer exist: take them out of the list',
    )
  })

  test('the scan finds each way of reading a query, and leaves what only builds one', () => {
    const reads = queryReads(
      'x.ts',
      `
      import qs from 'node:querystring'
      const firstQueryValue = (request: R, name: string) => {
        const target = request.raw.url ?? ''
        return new URLSearchParams(target.slice(target.indexOf('?') + 1)).get(name)
      }
      function fromUrl(location: string) { return new URL(location).searchParams.has('code') }
      function held(u: URL) { const q = u.searchParams; return q }
      function grant(req: R) { return (req.query as Record<string, string>).grant_type }
      function scope(this: { request: R }) { return this.request['query'] }
      function destructured(request: R) { const { query } = request; return query }
      function split(text: string) { return text.split('&').map((p) => p.split('=')) }
      `,
    )
    assert.deepEqual(
      reads.map((u) => `${u.where}: ${u.kind}`),
      [
        '<module>: query module',
        'firstQueryValue: URLSearchParams(text)',
        'fromUrl: searchParams read',
        'held: searchParams read',
        'grant: request.query read',
        'scope: request.query read',
        'destructured: request.query read',
        "split: split('&')",
      ],
    )
    const builds = queryReads(
      'y.ts',
      `
      function build(base: string) {
        const url = new URL(base)
        url.searchParams.set('redirect_uri', 'https://a.example/cb')
        url.searchParams.append('scope', 'openid')
        return url.href + new URLSearchParams({ a: '1' }).toString() + new URLSearchParams().toString()
      }
      function set(request: R) { request.query = {} }
      function schema(route: { query?: object }) { return route.query }
      `,
    )
    assert.deepEqual(builds, [])
  })
})
