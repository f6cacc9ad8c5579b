import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { it } from 'node:test'
import { promisify } from 'node:util'

const run = promisify(execFile)

// A WebAssembly function of the host application's own: a loop of n additions, run long enough
// under V8's own tiering budget to be recompiled by its optimizing compiler (TurboFan).
const HOST_MODULE = `new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f,
  0x03, 0x02, 0x01, 0x00,
  0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00,
  0x0a, 0x19, 0x01, 0x17, 0x01, 0x01, 0x7f,
  0x03, 0x40, 0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, 0x20, 0x01, 0x20, 0x00, 0x48, 0x0d, 0x00, 0x0b,
  0x20, 0x01, 0x0b,
])`

/** The tiers V8 compiled the host's function with, after authgate's modules named were loaded. */
async function hostTiers(imports: string[]): Promise<string[]> {
  const script = `
    ${imports.map((m) => `await import(${JSON.stringify(m)})`).join('\n')}
    console.log('HOST')
    const { f } = new WebAssembly.Instance(new WebAssembly.Module(${HOST_MODULE})).exports
    for (let i = 0; i < 10; i++) f(1_000_000)
    await new Promise((r) => setTimeout(r, 300))
    f(1_000_000)
  `
  const { stdout } = await run(
    process.execPath,
    ['--conditions=authgate-source', '--trace-wasm-compilation-times', '--input-type=module', '-e', script],
    { cwd: new URL('..', import.meta.url) },
  )
  const after = stdout.slice(stdout.indexOf('HOST'))
  return [...after.matchAll(/Compiled function 0x[0-9a-f]+#\d+ using (\w+)/g)].map((m) => m[1]!)
}

it('an application that loads authgate’s modules keeps V8’s WebAssembly tiering as it set it', async () => {
  // The stand-in swap compiles a module of its own when loaded; the host's budget stays V8's.
  const embedded = await hostTiers(['./src/sessions/masked-search.ts', './src/services/plugin.ts'])
  assert.ok(embedded.includes('TurboFan'), `the host's function was not optimised: ${embedded.join(', ')}`)
  // Only the service's entry raises the budget (src/wasm-tiering.ts): there, the same function stays
  // on its baseline code, which shows this test can tell the two apart.
  const service = await hostTiers(['./src/wasm-tiering.ts', './src/sessions/masked-search.ts'])
  assert.ok(service.includes('Liftoff') && !service.includes('TurboFan'), service.join(', '))
})
