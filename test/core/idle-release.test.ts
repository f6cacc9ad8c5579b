import assert from 'node:assert/strict'
import { test } from 'node:test'
import { getHeapSpaceStatistics } from 'node:v8'
import { collector } from '../../src/core/collector.ts'
import { GROWN_NEW_SPACE_BYTES, IDLE_CHECKS, IdleRelease } from '../../src/core/idle-release.ts'

const MiB = 1024 * 1024

test('one memory-reducing collection once the loop has been idle for a minute with a grown young generation, and only then', () => {
  const calls: unknown[] = []
  let utilization = 0.5
  let newSpace = 32 * MiB
  const release = new IdleRelease({
    utilization: () => utilization,
    newSpaceBytes: () => newSpace,
    collect: (options) => {
      calls.push(options)
      newSpace = 1 * MiB
    },
  })
  // Busy: nothing, however large the young generation.
  assert.equal(release.check(), false)
  // Idle with the young generation grown: nothing until it has been idle at every check of a minute.
  utilization = 0.001
  for (let i = 1; i < IDLE_CHECKS; i++) assert.equal(release.check(), false)
  // A pause that ends starts the count again.
  utilization = 0.5
  assert.equal(release.check(), false)
  utilization = 0.001
  for (let i = 1; i < IDLE_CHECKS; i++) assert.equal(release.check(), false)
  assert.equal(calls.length, 0)
  // The minute's last check: one collection, the reducing kind.
  assert.equal(release.check(), true)
  assert.deepEqual(calls, [{ type: 'major', flavor: 'last-resort' }])
  // Idle again, the young generation small: nothing more until a load grows it.
  assert.equal(release.check(), false)
  assert.equal(release.released, 1)
  // Idle at its initial size (never loaded): nothing.
  newSpace = GROWN_NEW_SPACE_BYTES
  assert.equal(release.check(), false)
  assert.equal(calls.length, 1)
})

test('a young generation the load grew and V8 shrank on its own before the minute was up still gets its collection', () => {
  let calls = 0
  let newSpace = 32 * MiB
  let utilization = 0.5
  const release = new IdleRelease({
    utilization: () => utilization,
    newSpaceBytes: () => newSpace,
    collect: () => calls++,
  })
  // Under load: the young generation at its largest.
  assert.equal(release.check(), false)
  // The load is over; V8's memory reducer shrinks the young generation at once, its pages stay pooled.
  utilization = 0.001
  newSpace = 1 * MiB
  for (let i = 1; i < IDLE_CHECKS; i++) assert.equal(release.check(), false)
  assert.equal(release.check(), true)
  assert.equal(calls, 1)
  // Once per load: idle on, nothing more.
  for (let i = 0; i < IDLE_CHECKS * 2; i++) assert.equal(release.check(), false)
  assert.equal(calls, 1)
})

test("V8's reducing collection shrinks a young generation a load grew", (t) => {
  const collect = collector()
  if (collect === undefined) return t.skip('V8 refuses --expose-gc here')
  const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size
  // Allocation that survives a few collections grows the young generation, as a load does (in the
  // shared test process another file's work may have grown it already).
  for (let round = 0; round < 400 && newSpace() <= GROWN_NEW_SPACE_BYTES; round++) {
    const keep: object[] = []
    for (let i = 0; i < 20_000; i++) keep.push({ i, s: `item ${i}` })
  }
  assert.ok(newSpace() > GROWN_NEW_SPACE_BYTES, `young generation ${newSpace()} bytes after the load`)
  const release = new IdleRelease({ utilization: () => 0, collect })
  for (let i = 1; i < IDLE_CHECKS; i++) release.check()
  assert.equal(release.check(), true)
  assert.ok(newSpace() <= GROWN_NEW_SPACE_BYTES, `young generation ${newSpace()} bytes after the collection`)
})
