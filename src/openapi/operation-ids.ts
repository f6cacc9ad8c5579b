/**
 * Operation ids from method and path : `GET /items` → `getItems`; path parameters are
 * left out unless two routes would share an id, in which case every route of that id spells its
 * parameters (`getItems`, `getItemsById`); an id still shared gets a numeric suffix. An id a route
 * states itself (`schema.operationId`) is kept. The result depends only on the set of routes, not
 * on the order they were registered in.
 */
export interface OperationKey {
  method: string
  /** OpenAPI path template, e.g. `/items/{id}`. */
  path: string
  /** `schema.operationId`, when the route gives one. */
  explicit?: string | undefined
}

const METHOD_ORDER = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace']

function pascal(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1)
}

function words(text: string): string[] {
  return text.split(/[^A-Za-z0-9]+/).filter(Boolean)
}

/** `getItems` for `GET /items/{id}`: the literal parts of the path only. */
export function baseOperationId(method: string, path: string): string {
  const literal = words(path.replace(/\{[^}]*\}/g, ' '))
    .map(pascal)
    .join('')
  return method.toLowerCase() + (literal || 'Root')
}

/** `getItemsById` for `GET /items/{id}`; `getUsersPostsByUserIdAndId` for two parameters. */
export function spelledOperationId(method: string, path: string): string {
  const params = [...path.matchAll(/\{([^}]*)\}/g)].map((m) =>
    words(m[1] ?? '')
      .map(pascal)
      .join(''),
  )
  const base = baseOperationId(method, path)
  return params.length === 0 ? base : `${base}By${params.join('And')}`
}

function compareKeys(a: OperationKey, b: OperationKey): number {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1
  return METHOD_ORDER.indexOf(a.method.toLowerCase()) - METHOD_ORDER.indexOf(b.method.toLowerCase())
}

/** Ids for `keys`, in the same order. */
export function assignOperationIds(keys: OperationKey[]): string[] {
  const order = keys.map((_, i) => i).sort((a, b) => compareKeys(keys[a]!, keys[b]!))
  const explicit = new Set(keys.flatMap((k) => (k.explicit ? [k.explicit] : [])))

  const baseCount = new Map<string, number>()
  for (const k of keys) {
    if (k.explicit) continue
    const base = baseOperationId(k.method, k.path)
    baseCount.set(base, (baseCount.get(base) ?? 0) + 1)
  }

  const wanted = keys.map((k) => {
    if (k.explicit) return k.explicit
    const base = baseOperationId(k.method, k.path)
    const shared = (baseCount.get(base) ?? 0) > 1 || explicit.has(base)
    return shared ? spelledOperationId(k.method, k.path) : base
  })

  // Unique ids are settled first so that a suffixed id can never take one of them; among routes
  // sharing an id, a stated id keeps it, then the first in path order.
  const count = new Map<string, number>()
  for (const id of wanted) count.set(id, (count.get(id) ?? 0) + 1)
  const taken = new Set(wanted.filter((id) => count.get(id) === 1))
  const result = wanted.slice()
  const pending = order.filter((i) => count.get(wanted[i]!)! > 1)
  pending.sort((a, b) => Number(!keys[a]!.explicit) - Number(!keys[b]!.explicit))
  for (const i of pending) {
    let id = wanted[i]!
    for (let n = 2; taken.has(id); n++) id = `${wanted[i]}${n}`
    taken.add(id)
    result[i] = id
  }
  return result
}
