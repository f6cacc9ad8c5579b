/**
 * The arithmetic of bench/instructions.ts, apart from the processes it drives so that it can be
 * tested without valgrind: reading callgrind's dumps, instructions per unit over measured windows,
 * how far the windows and the processes are apart, the ratio to the case's floor and the table.
 */

/**
 * The instructions a callgrind dump counted: its `totals:` line (all threads, as callgrind sums them
 * without --separate-threads), else its `summary:` line. The first event is taken: the only one the
 * bench collects is Ir, instructions executed.
 */
export function callgrindInstructions(dump: string): number {
  const events = /^events:\s*(\S+)/m.exec(dump)?.[1]
  if (events !== undefined && events !== 'Ir') throw new Error(`callgrind dump counts ${events}, not Ir first`)
  const line = /^totals:\s*(\d+)/m.exec(dump) ?? /^summary:\s*(\d+)/m.exec(dump)
  if (!line) throw new Error('callgrind dump without a totals or summary line')
  return Number(line[1])
}

/** One measured window: the instructions the peer's process executed while it served `units`. */
export interface Window {
  instructions: number
  units: number
}

/** Instructions per unit over the windows: their sum over the units' sum, not a mean of ratios. */
export function perUnit(windows: readonly Window[]): number {
  let instructions = 0
  let units = 0
  for (const w of windows) {
    instructions += w.instructions
    units += w.units
  }
  return units > 0 ? instructions / units : NaN
}

/** How far apart figures are: (largest − smallest) / their mean; NaN for fewer than two. */
export function spread(figures: readonly number[]): number {
  if (figures.length < 2) return NaN
  const mean = figures.reduce((s, x) => s + x, 0) / figures.length
  return (Math.max(...figures) - Math.min(...figures)) / mean
}

/**
 * Whether a process was still warming up: its windows' figures fall from each to the next and the
 * first is more than `tolerance` above the last. A warm process's windows go up and down around
 * its figure (a garbage collection lands in one of them, not in the next).
 */
export function stillFalling(figures: readonly number[], tolerance = 0.02): boolean {
  if (figures.length < 2) return false
  for (let i = 1; i < figures.length; i++) if (figures[i]! >= figures[i - 1]!) return false
  return figures[0]! > figures[figures.length - 1]! * (1 + tolerance)
}

/** One measured process of a peer in a case: its windows, in order. */
export interface Run {
  windows: Window[]
}

export interface Row {
  caseId: string
  caseLabel: string
  /** What one unit is: a request, a MB of an object, a socket message. */
  unit: 'req' | 'MB' | 'msg'
  floor: 'runtime' | 'framework'
  peer: string
  /** The peer is the case's floor (no ratio of its own). */
  isFloor: boolean
  runs: Run[]
  /** Why the peer was not measured (a wrong status, no such route). */
  problem?: string
}

export interface Figures {
  perUnit: number
  /** Spread of the windows' figures within each process, the largest of the processes. */
  windowSpread: number
  /** Spread of the processes' figures (NaN with one process). */
  processSpread: number
  stillFalling: boolean
}

export function figures(runs: readonly Run[]): Figures {
  const each = runs.map((r) => perUnit(r.windows))
  return {
    perUnit: perUnit(runs.flatMap((r) => r.windows)),
    windowSpread: Math.max(...runs.map((r) => spread(r.windows.map((w) => w.instructions / w.units)))),
    processSpread: spread(each),
    stillFalling: runs.some((r) => stillFalling(r.windows.map((w) => w.instructions / w.units))),
  }
}

const UNIT_NAME = { req: 'request', MB: 'MB', msg: 'message' } as const
const thousands = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–')
const percent = (n: number) => (Number.isFinite(n) ? `${(n * 100).toFixed(1)} %` : '–')

/**
 * The markdown table: one line per case and peer, with instructions per unit and the ratio to the
 * floor the case is judged by (the row of that floor in the same case; none on the floors' own rows).
 */
export function instructionsTable(rows: readonly Row[], floorNames: { runtime: string; framework: string }): string {
  const lines = [
    '| case | peer | instructions / unit | × its floor | spread of windows | spread of processes |',
    '|---|---|--:|--:|--:|--:|',
  ]
  for (const row of rows) {
    if (row.problem !== undefined || row.runs.length === 0) {
      lines.push(`| ${row.caseLabel} | ${row.peer} | ${row.problem ?? 'not measured'} | | | |`)
      continue
    }
    const f = figures(row.runs)
    const floorName = floorNames[row.floor]
    const floorRow = rows.find((r) => r.caseId === row.caseId && r.peer === floorName && r.problem === undefined)
    const floor = floorRow && floorRow.runs.length > 0 ? figures(floorRow.runs).perUnit : NaN
    const ratio =
      row.isFloor || !Number.isFinite(floor)
        ? ''
        : `${(f.perUnit / floor).toFixed(2)} ${row.floor === 'runtime' ? '*' : '†'}`
    lines.push(
      `| ${row.caseLabel} | ${row.peer} | ${thousands(f.perUnit)} / ${UNIT_NAME[row.unit]}${f.stillFalling ? ' (still falling)' : ''} | ${ratio} | ${percent(f.windowSpread)} | ${percent(f.processSpread)} |`,
    )
  }
  return lines.join('\n')
}
