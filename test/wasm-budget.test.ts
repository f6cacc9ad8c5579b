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

/**
 * The tier V8 runs the host's function in (V8's own answer, asked through its natives syntax), after
 * authgate's modules named were loaded and the function ran as long as V8's own budget allows.
 */
async function hostTier(imports: string[]): Promise<string> {
  const script = `
    ${imports.map((m) => `await import(${JSON.stringify(m)})`).join('\n')}
    const { f } = new WebAssembly.Instance(new WebAssembly.Module(${HOST_MODULE})).exports
    for (let i = 0; i < 10; i++) f(1_000_000)
    // The optimizing compile runs on a V8 thread: given time, and the function called again.
    await new Promise((r) => setTimeout(r, 300))
    f(1)
    console.log(%IsTurboFanFunction(f) ? 'TurboFan' : %IsLiftoffFunction(f) ? 'Liftoff' : 'other')
  `
  const { stdout } = await run(
    process.execPath,
    ['--conditions=authgate-source', '--allow-natives-syntax', '--input-type=module', '-e', script],
    { cwd: new URL('..', import.meta.url) },
  )
  return stdout.trim()
}

it('an application that loads authgate’s modules keeps V8’s WebAssembly tiering as it set it', async () => {
  // The stand-in swap compiles a module of its own when loaded; the host's budget stays V8's.
  assert.equal(await hostTier(['./src/sessions/masked-search.ts', './src/services/plugin.ts']), 'TurboFan')
  // Only the service's entry raises the budget (src/wasm-tiering.ts): there, the same function stays
  // on its baseline code, which shows this test can tell the two apart.
  assert.equal(await hostTier(['./src/wasm-tiering.ts', './src/sessions/masked-search.ts']), 'Liftoff')
})
