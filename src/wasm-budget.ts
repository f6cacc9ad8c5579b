import { setFlagsFromString } from 'node:v8'

/** The WebAssembly tiering budget the service runs with (src/wasm-tiering.ts says why). */
const RAISED_BUDGET = 2_000_000_000
/** V8's own budget (its `--wasm-tiering-budget` default). */
const V8_BUDGET = 13_000_000

// Whether this process raised the budget: only src/main.ts does. An application that embeds
// authgate as a library keeps its own V8 settings, whatever authgate's modules it loads.
let raised = false

/** Raises V8's WebAssembly tiering budget for the whole process: the service's entry point only. */
export function raiseWasmTieringBudget(): void {
  setFlagsFromString(`--wasm-tiering-budget=${RAISED_BUDGET}`)
  raised = true
}

/**
 * A module of authgate's own compiled with V8's own budget: a small function on a hot path (the
 * stand-in swap's search, src/sessions/masked-search.ts) whose optimizing compile costs next to
 * nothing, and whose baseline code runs at about twice the instructions (docs/decisions.md, D222).
 * Under the raised budget it would stay on its baseline code for millions of calls. V8 gives a
 * module its budget when the module is compiled, so the budget is V8's own for this compile only.
 */
export function compiledSoon(bytes: Uint8Array<ArrayBuffer>): WebAssembly.Module {
  if (!raised) return new WebAssembly.Module(bytes)
  setFlagsFromString(`--wasm-tiering-budget=${V8_BUDGET}`)
  try {
    return new WebAssembly.Module(bytes)
  } finally {
    setFlagsFromString(`--wasm-tiering-budget=${RAISED_BUDGET}`)
  }
}
