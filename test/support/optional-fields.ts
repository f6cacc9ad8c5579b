/**
 * The optional properties of a request body type, as paths (`["gotrue_meta_security",
 * "captcha_token"]`), at any depth of nested object types: where a client may send `null`.
 */
export function optionalFieldPaths(schema: unknown, at: string[] = []): string[][] {
  const s = schema as { properties?: Record<string, unknown>; required?: string[] }
  if (s === null || typeof s !== 'object' || s.properties === undefined) return []
  const required = new Set(s.required ?? [])
  const out: string[][] = []
  for (const [name, property] of Object.entries(s.properties)) {
    const path = [...at, name]
    if (!required.has(name)) out.push(path)
    out.push(...optionalFieldPaths(property, path))
  }
  return out
}

/** The property schema at `path` in an object type. */
export function schemaAt(schema: unknown, path: string[]): Record<string, unknown> {
  let s = schema as Record<string, unknown>
  for (const name of path) s = (s.properties as Record<string, Record<string, unknown>>)[name]!
  return s
}

/** A copy of `body` with the value at `path` set to `null` (parents created as objects). */
export function withNullAt(body: Record<string, unknown>, path: string[]): Record<string, unknown> {
  const copy = structuredClone(body)
  let node = copy
  for (const name of path.slice(0, -1)) {
    const next = node[name]
    if (next === null || typeof next !== 'object') node[name] = {}
    node = node[name] as Record<string, unknown>
  }
  node[path.at(-1)!] = null
  return copy
}
