/**
 * The body reader (src/auth/body.ts `readBody`: UTF-8 and bracket checks, parsing, the key walk, case
 * folds, types, NUL, nulls) on the worst bodies a client can send, against `JSON.parse` of the same
 * bytes. Target: at most 3 × its time. Measures and prints; judges nothing.
 *   node bench/body-reader.ts [--rounds 30]
 */
import { parseArgs } from 'node:util'
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, readBody } from '../src/auth/body.ts'
import { AUTH_ROUTES, routeName } from '../src/auth/routes/index.ts'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '30' } } })
const ROUNDS = Number(values.rounds)
const MIB = 1024 * 1024
const route = AUTH_ROUTES.find((r) => routeName(r) === 'POST /signup')!
const HEAD = '{"email":"a@example.com","password":"correct-horse-battery","data":'

/** `HEAD` + `open` + as many `item`s (comma-separated) as fit in `size` bytes + `close` + `}`. */
function filled(open: string, item: (i: number) => string, close: string, size = MIB): string {
  const parts: string[] = [HEAD + open]
  let length = parts[0]!.length + close.length + 1
  for (let i = 0; ; i++) {
    const next = (i === 0 ? '' : ',') + item(i)
    if (length + next.length > size) break
    parts.push(next)
    length += next.length
  }
  return parts.join('') + close + '}'
}

const deep = MAX_JSON_DEPTH - 2
const CASES: Array<[string, string]> = [
  // The body: 510 deep, then `[],[],…` to 1 MiB. Refused at the bracket bound, in one pass.
  ['1 MiB, 510 deep then [],[],… (refused)', filled('['.repeat(deep), () => '[]', ']'.repeat(deep))],
  // As deep and as many brackets as are read, the rest of the MiB in a string.
  [
    'at both bracket bounds, padded to 1 MiB',
    filled(
      '['.repeat(deep),
      (i) => (i < MAX_JSON_CONTAINERS - deep - 2 ? '[]' : `"${'x'.repeat(600_000)}"`),
      ']'.repeat(deep),
    ),
  ],
  ['1 MiB of distinct keys', filled('{', (i) => `"k${i}":${i}`, '}')],
  ['1 MiB of escaped keys', filled('{', (i) => `"\\u006b${i}":1`, '}')],
  ['1 MiB of escapes in values', filled('{"s":"', () => '\\u017f\\n\\"', '"}')],
  ['1 MiB of nulls (copied without them)', filled('{', (i) => `"k${i}":null`, '}')],
  ['1 MiB of short strings in an array', filled('[', () => '"x"', ']')],
]

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]!
}

/**
 * Microseconds per call of `a` and of `b`, and their ratio: medians of `ROUNDS` pairs, each pair
 * timed back to back (the machine's load moves both alike), after unmeasured calls.
 */
function compare(a: () => unknown, b: () => unknown): { a: number; b: number; ratio: number } {
  for (let i = 0; i < Math.min(ROUNDS, 10); i++) {
    a()
    b()
  }
  const as: number[] = []
  const bs: number[] = []
  const ratios: number[] = []
  const clock = () => Number(process.hrtime.bigint()) / 1000
  for (let i = 0; i < ROUNDS; i++) {
    let start = clock()
    a()
    const ta = clock() - start
    start = clock()
    b()
    const tb = clock() - start
    as.push(ta)
    bs.push(tb)
    ratios.push(ta / tb)
  }
  return { a: median(as), b: median(bs), ratio: median(ratios) }
}

console.log(`| body | bytes | read | JSON.parse | × (median of pairs) |`)
console.log(`|---|--:|--:|--:|--:|`)
for (const [name, text] of CASES) {
  const buf = Buffer.from(text)
  const read = readBody(route, buf, 'application/json')
  const outcome = 'body' in read ? 'read' : 'refused' in read ? `refused: ${read.message}` : 'undecodable'
  if (name.includes('refused') !== outcome.startsWith('refused')) throw new Error(`${name}: ${outcome}`)
  const { a, b, ratio } = compare(
    () => readBody(route, buf, 'application/json'),
    () => JSON.parse(buf.toString('utf8')),
  )
  console.log(`| ${name} | ${buf.length} | ${a.toFixed(0)} µs | ${b.toFixed(0)} µs | ${ratio.toFixed(2)} |`)
}
