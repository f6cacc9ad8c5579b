import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { test } from 'node:test'

/** The young generation's physical size after a start-up-like allocation (30 MB kept), with or without the module. */
function youngGenerationMb(withModule: boolean, thenGrow: boolean): number {
  const script = `
    ${withModule ? `const { growWithLoad } = await import(${JSON.stringify(new URL('../src/startup-heap.ts', import.meta.url).href)})` : ''}
    const v8 = await import('node:v8')
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size / 2 ** 20
    const kept = []
    const fill = () => { for (let i = 0; i < 300_000; i++) kept.push({ i, s: 'x'.repeat(i % 64) }) }
    fill()
    ${thenGrow ? (withModule ? 'growWithLoad();' : '') + ' fill()' : ''}
    console.log(young())
  `
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim())
}

test('the young generation keeps its initial size through start-up, and grows again once told', () => {
  const plain = youngGenerationMb(false, false)
  const kept = youngGenerationMb(true, false)
  assert.ok(plain >= 8, `without the module V8 grows it: ${plain} MB`)
  assert.ok(kept <= 4, `with it, it stays small: ${kept} MB`)
  const grown = youngGenerationMb(true, true)
  assert.ok(grown >= 8, `after growWithLoad it grows as V8 would: ${grown} MB`)
})
