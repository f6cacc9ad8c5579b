import { raiseWasmTieringBudget } from './wasm-budget.ts'

// undici parses Supabase Auth's responses with llhttp compiled to WebAssembly. V8 runs it with its
// baseline compiler first and, by default, recompiles the parser's main function with its optimizing
// compiler after three to five responses: a compile that peaks at about 23 MB of scratch memory on
// a V8 thread, of which the C allocator keeps about 9 MB resident for the life of the process. The
// start-up checks alone made those exchanges, so every idle process held it. With a budget about 150
// times V8's default the optimizing compile comes after a few hundred responses: at once under
// load, where it pays, and not in a process that only started and answers probes
// (docs/decisions.md, D50). Imported by src/main.ts before the service is read: V8 gives a module
// its budgets when the module is compiled.
raiseWasmTieringBudget()
