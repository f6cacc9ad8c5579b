/**
 * The soak's memory figures: the verdicts on its samples, and the samples drawn as a small SVG (no
 * chart library: a few polylines, axes and marks, written by hand).
 */

export interface MemorySample {
  /** Seconds since the soak's clock started (the idle sample before the load is at 0). */
  atS: number
  rssMb: number
  heapMb: number
  /** V8's reserved heap and memory outside it (buffers): where an RSS step comes from. */
  heapTotalMb: number
  /** The young generation's reserved size (its semi-spaces): what a load grows and the idle release shrinks. */
  newSpaceMb: number
  externalMb: number
  fds: number
  loopP99Ms: number
}

/** Something that happened during the run, marked on the plot. */
export interface Mark {
  atS: number
  label: string
}

export interface MemoryBudget {
  /** RSS never above this (MB). */
  maxRssMb: number
  /** RSS after the load within this of the idle RSS before it (MB). */
  returnMb: number
  /** Seconds after the load at which the return is judged. */
  afterS: number
}

export const ISSUE_BUDGET: MemoryBudget = { maxRssMb: 150, returnMb: 20, afterS: 60 }

export interface MemoryVerdicts {
  idleRssMb: number
  maxRssMb: number
  maxRssAtS: number
  /** The last sample taken while the load ran. */
  endOfLoadRssMb: number
  /** The first sample at least `afterS` after the load, and the last sample of the run. */
  afterRssMb: number | undefined
  afterAtS: number | undefined
  lastRssMb: number
  lastAtS: number
  withinMax: boolean
  /** undefined when no sample was taken `afterS` after the load. */
  returned: boolean | undefined
  /** The last sample within `returnMb` of idle (the run may sample longer than `afterS`). */
  returnedByLast: boolean
}

/**
 * `samples[0]` is the idle process before the load; the load ran from `loadStartS` to `loadEndS`.
 */
export function memoryVerdicts(
  samples: readonly MemorySample[],
  loadEndS: number,
  budget: MemoryBudget = ISSUE_BUDGET,
): MemoryVerdicts {
  if (samples.length === 0) throw new Error('no samples')
  const idle = samples[0]!
  let max = idle
  for (const s of samples) if (s.rssMb > max.rssMb) max = s
  const during = samples.filter((s) => s.atS <= loadEndS)
  const endOfLoad = during[during.length - 1] ?? idle
  const after = samples.find((s) => s.atS >= loadEndS + budget.afterS)
  const last = samples[samples.length - 1]!
  return {
    idleRssMb: idle.rssMb,
    maxRssMb: max.rssMb,
    maxRssAtS: max.atS,
    endOfLoadRssMb: endOfLoad.rssMb,
    afterRssMb: after?.rssMb,
    afterAtS: after?.atS,
    lastRssMb: last.rssMb,
    lastAtS: last.atS,
    withinMax: max.rssMb <= budget.maxRssMb,
    returned: after === undefined ? undefined : after.rssMb - idle.rssMb <= budget.returnMb,
    returnedByLast: last.atS > loadEndS && last.rssMb - idle.rssMb <= budget.returnMb,
  }
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A step for an axis: 1, 2 or 5 times a power of ten, giving about `count` ticks over `span`. */
export function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count)
  const power = 10 ** Math.floor(Math.log10(raw))
  for (const m of [1, 2, 5]) if (m * power >= raw) return m * power
  return 10 * power
}

/**
 * RSS and heap (used, and V8's reserved total) over time, with the budget's line, the marks (faults,
 * the end of the load) as dashed verticals, and a legend. Standalone SVG 1.1, no script, no fonts
 * beyond the generic family.
 */
export function memoryPlotSvg(
  samples: readonly MemorySample[],
  marks: readonly Mark[],
  options: { title: string; budgetMb?: number; width?: number; height?: number },
): string {
  const width = options.width ?? 760
  const height = options.height ?? 340
  const left = 52
  const right = 16
  const top = 34
  const bottom = 52
  const plotW = width - left - right
  const plotH = height - top - bottom
  const maxS = Math.max(1, ...samples.map((s) => s.atS), ...marks.map((m) => m.atS))
  const topMb = Math.max(options.budgetMb ?? 0, ...samples.map((s) => Math.max(s.rssMb, s.heapTotalMb))) * 1.08
  const x = (s: number) => left + (s / maxS) * plotW
  const y = (mb: number) => top + plotH - (mb / topMb) * plotH
  const f = (n: number) => n.toFixed(1)
  const out: string[] = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="18" font-size="13" font-weight="bold">${escapeXml(options.title)}</text>`,
  )
  const mbStep = niceStep(topMb, 6)
  for (let mb = 0; mb <= topMb; mb += mbStep) {
    out.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${f(y(mb))}" y2="${f(y(mb))}" stroke="#e5e5e5"/>`,
      `<text x="${left - 6}" y="${f(y(mb) + 4)}" text-anchor="end" fill="#555">${mb}</text>`,
    )
  }
  const sStep = niceStep(maxS, 10)
  for (let s = 0; s <= maxS; s += sStep) {
    out.push(
      `<line x1="${f(x(s))}" x2="${f(x(s))}" y1="${top + plotH}" y2="${top + plotH + 4}" stroke="#555"/>`,
      `<text x="${f(x(s))}" y="${top + plotH + 16}" text-anchor="middle" fill="#555">${s}</text>`,
    )
  }
  out.push(
    `<text x="${left + plotW}" y="${top + plotH + 30}" text-anchor="end" fill="#333">seconds</text>`,
    `<text x="12" y="${top + plotH / 2}" text-anchor="middle" fill="#333" transform="rotate(-90 12 ${top + plotH / 2})">MB</text>`,
    `<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  )
  if (options.budgetMb !== undefined) {
    out.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${f(y(options.budgetMb))}" y2="${f(y(options.budgetMb))}" stroke="#c0392b" stroke-dasharray="2 3"/>`,
      `<text x="${left + plotW - 4}" y="${f(y(options.budgetMb) - 4)}" text-anchor="end" fill="#c0392b">${options.budgetMb} MB budget</text>`,
    )
  }
  marks.forEach((m, i) => {
    const mx = x(m.atS)
    // Labels alternate between two rows so that marks close together stay readable.
    const ly = top + 12 + (i % 2) * 13
    out.push(
      `<line x1="${f(mx)}" x2="${f(mx)}" y1="${top}" y2="${top + plotH}" stroke="#777" stroke-dasharray="4 3"/>`,
      `<text x="${f(mx + 3)}" y="${ly}" fill="#444">${escapeXml(m.label)}</text>`,
    )
  })
  const series = [
    { key: 'rssMb', label: 'RSS', color: '#1f77b4', widthPx: 2 },
    { key: 'heapTotalMb', label: 'V8 heap reserved', color: '#2ca02c', widthPx: 1.5 },
    { key: 'heapMb', label: 'V8 heap used', color: '#ff7f0e', widthPx: 1.5 },
    { key: 'externalMb', label: 'external (buffers)', color: '#9467bd', widthPx: 1 },
  ] as const
  for (const s of series) {
    const points = samples.map((p) => `${f(x(p.atS))},${f(y(p[s.key]))}`).join(' ')
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="${s.widthPx}" points="${points}"/>`)
  }
  series.forEach((s, i) => {
    const lx = left + i * 150
    const ly = height - 8
    out.push(
      `<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="${s.widthPx + 1}"/>`,
      `<text x="${lx + 22}" y="${ly}" fill="#333">${escapeXml(s.label)}</text>`,
    )
  })
  out.push('</svg>', '')
  return out.join('\n')
}
