import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  callgrindInstructions,
  figures,
  instructionsTable,
  perUnit,
  spread,
  stillFalling,
  type Row,
} from '../../bench/callgrind.ts'

// The head of a dump as callgrind_control --dump makes one (callgrind 3.19), trimmed.
const DUMP = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 15305
cmd:  node srv.mjs
part: 1


desc: I1 cache: 
desc: D1 cache: 
desc: LL cache: 

desc: Timerange: Basic block 106567205 - 120211987
desc: Trigger: dump

positions: line
events: Ir
summary: 72797176


ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) 0x0000000000f1c2a0
0 12
totals: 72797176
`

describe('reading a callgrind dump', () => {
  it('takes the totals line, all threads summed', () => {
    assert.equal(callgrindInstructions(DUMP), 72_797_176)
  })

  it('falls back to the summary line when there is no totals line', () => {
    assert.equal(callgrindInstructions(DUMP.replace(/^totals:.*$/m, '')), 72_797_176)
  })

  it('refuses a dump without either, or one whose first event is not instructions', () => {
    assert.throws(() => callgrindInstructions('events: Ir\n'), /without a totals or summary line/)
    assert.throws(() => callgrindInstructions(DUMP.replace('events: Ir', 'events: Dr Ir')), /counts Dr/)
  })
})

describe('instructions per unit over windows', () => {
  it('is the sum of the instructions over the sum of the units, not a mean of ratios', () => {
    // 100/req over 1000 requests and 200/req over 3000: 700,000 / 4000 = 175, where the mean of ratios is 150.
    assert.equal(
      perUnit([
        { instructions: 100_000, units: 1000 },
        { instructions: 600_000, units: 3000 },
      ]),
      175,
    )
    assert.ok(Number.isNaN(perUnit([])))
  })

  it('gives the spread as (largest − smallest) / mean, and none for a single figure', () => {
    assert.equal(spread([90, 100, 110]), 0.2)
    assert.ok(Number.isNaN(spread([100])))
  })

  it('tells a process still warming (every window below the last, by more than the tolerance) from a warm one', () => {
    assert.equal(stillFalling([400, 340, 280]), true)
    // A collection in the middle window: up then down, warm.
    assert.equal(stillFalling([300, 330, 301]), false)
    // Falling, but by less than 2 %: warm.
    assert.equal(stillFalling([300, 299, 298]), false)
    assert.equal(stillFalling([300]), false)
  })

  it('sums each process and spreads windows within a process and processes between them', () => {
    const f = figures([
      {
        windows: [
          { instructions: 100_000, units: 1000 },
          { instructions: 110_000, units: 1000 },
        ],
      },
      {
        windows: [
          { instructions: 120_000, units: 1000 },
          { instructions: 120_000, units: 1000 },
        ],
      },
    ])
    assert.equal(f.perUnit, 112.5)
    // Process 1: 100 and 110 (mean 105): 10/105; process 2: none. The larger is reported.
    assert.equal(f.windowSpread, 10 / 105)
    // Processes: 105 and 120, mean 112.5.
    assert.equal(f.processSpread, 15 / 112.5)
    assert.equal(f.stillFalling, false)
  })
})

describe('the table', () => {
  const FLOORS = { runtime: 'node floor', framework: 'fastify floor' }
  const row = (caseId: string, peer: string, perRequest: number[], extra: Partial<Row> = {}): Row => ({
    caseId,
    caseLabel: `(${caseId})`,
    unit: 'req',
    floor: caseId === 'd' ? 'runtime' : 'framework',
    peer,
    isFloor: peer.endsWith('floor'),
    runs: [{ windows: perRequest.map((x) => ({ instructions: x * 1000, units: 1000 })) }],
    ...extra,
  })

  it("puts each peer against its case's floor: the framework floor for (a), the runtime floor for (d)", () => {
    const table = instructionsTable(
      [
        row('a', 'authgate', [300_000, 300_000]),
        row('a', 'fastify floor', [200_000, 200_000]),
        row('a', 'node floor', [100_000, 100_000]),
        row('d', 'authgate', [90_000, 110_000]),
        row('d', 'node floor', [50_000, 50_000]),
        row('d', 'fastify floor', [80_000, 80_000]),
      ],
      FLOORS,
    )
    const lines = table.split('\n')
    assert.equal(
      lines[0],
      '| case | peer | instructions / unit | × its floor | spread of windows | spread of processes |',
    )
    assert.equal(lines[2], '| (a) | authgate | 300,000 / request | 1.50 † | 0.0 % | – |')
    // The floors' own rows carry no ratio, even against the other floor.
    assert.equal(lines[3], '| (a) | fastify floor | 200,000 / request |  | 0.0 % | – |')
    assert.equal(lines[4], '| (a) | node floor | 100,000 / request |  | 0.0 % | – |')
    assert.equal(lines[5], '| (d) | authgate | 100,000 / request | 2.00 * | 20.0 % | – |')
  })

  it('says why a peer has no figure, gives no ratio without its floor, and marks a process still warming', () => {
    const table = instructionsTable(
      [
        row('c', 'authgate', [400_000, 350_000, 300_000]),
        row('c', 'fastify floor', [], { problem: 'answered 1 × 404, expected 302' }),
      ],
      FLOORS,
    )
    const lines = table.split('\n')
    assert.equal(lines[2], '| (c) | authgate | 350,000 / request (still falling) |  | 28.6 % | – |')
    assert.equal(lines[3], '| (c) | fastify floor | answered 1 × 404, expected 302 | | | |')
  })
})
