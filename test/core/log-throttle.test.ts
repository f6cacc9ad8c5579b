import assert from 'node:assert/strict'
import { test } from 'node:test'
import { throttle } from '../../src/core/log-throttle.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

test('without onSkipped, the skipped count rides on the next written line', async () => {
  const t = throttle(200)
  assert.deepEqual(t.take('a'), { write: true, occurrences: 1 })
  for (let i = 0; i < 5; i++) assert.deepEqual(t.take('a'), { write: false })
  assert.deepEqual(t.take('b'), { write: true, occurrences: 1 }, 'keys are separate')
  await sleep(300)
  assert.deepEqual(t.take('a'), { write: true, occurrences: 6 })
})

test('with onSkipped, the count is said when the interval ends, with nothing else happening', async () => {
  const said: Array<[string, number]> = []
  const t = throttle(1000, { onSkipped: (key, n) => said.push([key, n]) })
  const until = async (n: number) => {
    while (said.length < n) await sleep(5)
  }
  const started = performance.now()
  assert.equal(t.take('a').write, true)
  for (let i = 0; i < 2999; i++) assert.equal(t.take('a').write, false)
  assert.deepEqual(said, [], 'not before the interval ends')
  await until(1)
  assert.ok(performance.now() - started >= 990, 'at the end of the interval')
  assert.deepEqual(said, [['a', 2999]])
  // The summary opened a new interval: what follows at once is counted towards the next one.
  assert.equal(t.take('a').write, false)
  await until(2)
  assert.deepEqual(said[1], ['a', 1])
  // A quiet interval says nothing, and the next occurrence is written at once.
  await sleep(1200)
  assert.deepEqual(t.take('a'), { write: true, occurrences: 1 })
  assert.equal(said.length, 2)
})
