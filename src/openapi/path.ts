/**
 * Fastify (find-my-way) route paths → OpenAPI path templates: `:id` → `{id}`, `:id(^\d+$)` →
 * `{id}` (the pattern is kept for the parameter schema), `:id?` → `{id}`, `::` → a literal `:`,
 * and the `*` wildcard → `{wildcard}` (Fastify's `params['*']`).
 */
export interface PathParam {
  /** Name in the OpenAPI template. */
  name: string
  /** Key in Fastify's `request.params` (differs only for the wildcard). */
  key: string
  /** Regular expression Fastify applies, when the path declares one. */
  pattern?: string
}

export interface OpenApiPath {
  path: string
  params: PathParam[]
}

export const WILDCARD_NAME = 'wildcard'

export function toOpenApiPath(fastifyPath: string): OpenApiPath {
  const params: PathParam[] = []
  let out = ''
  let i = 0
  while (i < fastifyPath.length) {
    const ch = fastifyPath[i]!
    if (ch === ':' && fastifyPath[i + 1] === ':') {
      out += ':'
      i += 2
      continue
    }
    if (ch === ':') {
      let j = i + 1
      while (j < fastifyPath.length && !'-./(?:;'.includes(fastifyPath[j]!)) j++
      const name = fastifyPath.slice(i + 1, j)
      let pattern: string | undefined
      if (fastifyPath[j] === '(') {
        // Regex groups may nest parentheses; find the matching close.
        let depth = 0
        let k = j
        for (; k < fastifyPath.length; k++) {
          if (fastifyPath[k] === '\\') {
            k++
            continue
          }
          if (fastifyPath[k] === '(') depth++
          else if (fastifyPath[k] === ')' && --depth === 0) break
        }
        pattern = fastifyPath.slice(j + 1, k)
        j = k + 1
      }
      if (fastifyPath[j] === '?') j++
      params.push(pattern === undefined ? { name, key: name } : { name, key: name, pattern })
      out += `{${name}}`
      i = j
      continue
    }
    if (ch === '*') {
      params.push({ name: WILDCARD_NAME, key: '*' })
      out += `{${WILDCARD_NAME}}`
      i++
      continue
    }
    out += ch
    i++
  }
  return { path: out === '' ? '/' : out, params }
}
