import { setFlagsFromString } from 'node:v8'

// undici parses Supabase Auth's responses with llhttp compiled to WebAssembly. V8 runs it with its
// baseline compiler first and, by default, recompiles the parser's main function with its optimizing
// compiler after three to five responses: a compile that peaks at about 23 MB of scratch memory on
// a V8 thread, of which the C allocator keeps about 9 MB resident for the life of the process. The
// start-up checks alone made those exchanges, so every idle process held it. With a budget about 150
// times V8's default the optimizing compile comes after a few hundred responses: at once under
// load, where it pays, and not in a process that only started and answers probes
// (docs/decisions.md, D50). Imported by src/main.ts before the service is read: V8 gives a module
// its budgets when the module is compiled.
const BUDGET = 2_000_000_000
setFlagsFromString(`--wasm-tiering-budget=${BUDGET}`)

/** V8's own budget (its `--wasm-tiering-budget` default). */
const V8_BUDGET = 13_000_000

/**
 * A module of authgate's own compiled with V8's own budget: a small function on a hot path (the
 * stand-in swap's search, src/sessions/masked-search.ts) whose optimizing compile costs next to
 * nothing, and whose baseline code runs at about twice the instructions (docs/decisions.md, D222).
 * Under the budget above it would stay on its baseline code for millions of calls.
 */
export function compiledSoon(bytes: Uint8Array<ArrayBuffer>): WebAssembly.Module {
  setFlagsFromString(`--wasm-tiering-budget=${V8_BUDGET}`)
  try {
    return new WebAssembly.Module(bytes)
  } finally {
    setFlagsFromString(`--wasm-tiering-budget=${BUDGET}`)
  }
}
