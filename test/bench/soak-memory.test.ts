import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { memoryPlotSvg, memoryVerdicts, niceStep, type MemorySample } from '../../bench/soak/memory.ts'

const at = (atS: number, rssMb: number, heapMb = 30): MemorySample => ({
  atS,
  rssMb,
  heapMb,
  heapTotalMb: heapMb + 10,
  newSpaceMb: 16,
  externalMb: 5,
  fds: 30,
  loopP99Ms: 10,
})

describe('the soak memory verdicts', () => {
  it('judges the maximum against the budget and the return a minute after the load against idle', () => {
    const samples = [at(0, 100), at(10, 140), at(20, 149), at(30, 145), at(60, 130), at(89, 125), at(95, 118)]
    const v = memoryVerdicts(samples, 30)
    assert.equal(v.idleRssMb, 100)
    assert.equal(v.maxRssMb, 149)
    assert.equal(v.maxRssAtS, 20)
    assert.equal(v.endOfLoadRssMb, 145)
    assert.equal(v.withinMax, true)
    // +60 s after the load is the first sample at or past 90 s.
    assert.equal(v.afterAtS, 95)
    assert.equal(v.afterRssMb, 118)
    assert.equal(v.returned, true)
    assert.equal(v.returnedByLast, true)
  })

  it('says when the process stayed above the return margin or the budget', () => {
    const v = memoryVerdicts([at(0, 100), at(10, 151), at(20, 150), at(80, 121)], 20)
    assert.equal(v.withinMax, false)
    assert.equal(v.afterRssMb, 121)
    assert.equal(v.returned, false)
    assert.equal(v.returnedByLast, false)
  })

  it('leaves the return unjudged when nothing was sampled a minute after the load', () => {
    const v = memoryVerdicts([at(0, 100), at(10, 120), at(40, 105)], 10)
    assert.equal(v.afterRssMb, undefined)
    assert.equal(v.returned, undefined)
    assert.equal(v.returnedByLast, true)
  })
})

describe('the soak memory plot', () => {
  const samples = [at(0, 100), at(300, 140, 50), at(600, 130), at(720, 110)]
  const svg = memoryPlotSvg(samples, [{ atS: 180, label: 'auth <backend> restart' }], {
    title: 'soak & faults',
    budgetMb: 150,
  })

  it('draws one line per series with a point per sample, inside the plot area', () => {
    const lines = [...svg.matchAll(/<polyline [^>]*points="([^"]+)"/g)].map((m) => m[1]!.split(' '))
    assert.equal(lines.length, 4)
    for (const points of lines) {
      assert.equal(points.length, samples.length)
      for (const p of points) {
        const [x, y] = p.split(',').map(Number)
        assert.ok(x! >= 52 && x! <= 760 - 16, `x ${x}`)
        assert.ok(y! >= 34 && y! <= 340 - 52, `y ${y}`)
      }
    }
    // Time runs left to right, and the highest RSS is the highest point.
    const rss = lines[0]!.map((p) => p.split(',').map(Number))
    assert.ok(rss[0]![0]! < rss[3]![0]!)
    assert.equal(Math.min(...rss.map((p) => p[1]!)), rss[1]![1])
  })

  it('marks the budget and the faults, with their text escaped', () => {
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    assert.match(svg, /150 MB budget/)
    assert.match(svg, /auth &lt;backend&gt; restart/)
    assert.match(svg, /soak &amp; faults/)
    assert.doesNotMatch(svg, /<backend>/)
    assert.match(svg, /<\/svg>\n$/)
  })

  it('spaces its ticks at 1, 2 or 5 times a power of ten', () => {
    assert.equal(niceStep(720, 10), 100)
    assert.equal(niceStep(160, 6), 50)
    assert.equal(niceStep(7, 10), 1)
  })
})
