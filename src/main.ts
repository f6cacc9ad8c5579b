#!/usr/bin/env node
// The service's entry point. ESM reads and compiles every module a file imports statically before it
// runs any of them, so the heap setting is this file's only static import and the service (the
// command line, the settings, the app) is imported once it has run; imported next to them, it came
// too late for the young generation they had grown while being read (docs/decisions.md, D42).
import './startup-heap.ts'

await import('./cli.ts')
