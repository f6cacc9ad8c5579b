import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * src/ stands in layers: each top-level folder (and each top-level file; `src/config.ts` belongs
 * with `src/config/`) is one part, and the parts' imports form no loop. So every part stands above
 * all it imports, and no import runs from a lower part back up to a higher one (the leaves every
 * part shares live in src/core/). Run alone: `node --test test/layers.test.ts`.
 */

const SRC = fileURLToPath(new URL('../src/', import.meta.url))

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

/** The part a file of src/ belongs to. */
function partOf(file: string): string {
  const [first, ...rest] = relative(SRC, file).split('/')
  if (rest.length > 0) return `${first}/`
  return first === 'config.ts' ? 'config/' : first!
}

/** Relative imports and re-exports of a file, static or dynamic, types included. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const out: string[] = []
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm))
    out.push(resolve(dirname(file), m[1]!))
  return out
}

/** The imports between parts, one entry per part pair with the file imports that make it. */
function partGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>()
  for (const file of sources(SRC)) {
    const from = partOf(file)
    if (!graph.has(from)) graph.set(from, new Map())
    for (const target of importsOf(file)) {
      if (!target.startsWith(SRC)) continue
      const to = partOf(target)
      if (to === from) continue
      const edges = graph.get(from)!
      edges.set(to, [...(edges.get(to) ?? []), `${relative(SRC, file)} -> ${relative(SRC, target)}`])
    }
  }
  return graph
}

/** Strongly connected parts (Tarjan): a group of more than one is a loop. */
function loops(graph: Map<string, Map<string, string[]>>): string[][] {
  let index = 0
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const on = new Set<string>()
  const out: string[][] = []
  const visit = (v: string) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const group: string[] = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        group.push(w)
      } while (w !== v)
      if (group.length > 1) out.push(group)
    }
  }
  for (const v of graph.keys()) if (!idx.has(v)) visit(v)
  return out
}

test('no import of src/ runs back up: the parts import each other in no loop', () => {
  const graph = partGraph()
  assert.ok(graph.size > 10, 'the parts of src/ were read')
  const found = loops(graph).map((group) => {
    const inside = new Set(group)
    const imports = group.flatMap((from) =>
      [...(graph.get(from)?.entries() ?? [])].filter(([to]) => inside.has(to)).flatMap(([, files]) => files),
    )
    return `${group.join(' <-> ')}:\n  ${imports.join('\n  ')}`
  })
  assert.deepEqual(
    found,
    [],
    `parts that import each other (move the shared piece down, to src/core/):\n${found.join('\n')}`,
  )
})

test('src/core/ imports nothing else of src/', () => {
  const up = [...(partGraph().get('core/')?.values() ?? [])].flat()
  assert.deepEqual(up, [])
})

const ROOT = fileURLToPath(new URL('../', import.meta.url))

/** Every program file under a folder: TypeScript and the launcher's plain JavaScript. */
function programFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? programFiles(join(dir, e.name)) : /\.(?:ts|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  )
}

test('the product and its scripts import nothing of the tests: src/, scripts/ and bin/ stay out of e2e/ and test/', () => {
  const files = ['src', 'scripts', 'bin'].flatMap((dir) => programFiles(join(ROOT, dir)))
  assert.ok(
    files.some((f) => f.endsWith('.js')) && files.length > 100,
    'the files of src/, scripts/ and bin/ were read',
  )
  const tests = ['e2e/', 'test/'].map((dir) => join(ROOT, dir))
  const found = files.flatMap((file) =>
    importsOf(file)
      .filter((target) => tests.some((t) => target.startsWith(t)))
      .map((target) => `${relative(ROOT, file)} -> ${relative(ROOT, target)}`),
  )
  assert.deepEqual(found, [], 'files that load test code (move the shared piece under scripts/ or src/)')
})
