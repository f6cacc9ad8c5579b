#!/usr/bin/env node
// The service's entry point. ESM reads and compiles every module a file imports statically before it
// runs any of them, so the V8 settings are this file's only static imports and the service (the
// command line, the settings, the app) is imported once they have run; imported next to them, the
// heap setting came too late for the young generation the service had grown while being read
// (docs/decisions.md, D42).
import './startup-heap.ts'
import './wasm-tiering.ts'

await import('./cli.ts')
