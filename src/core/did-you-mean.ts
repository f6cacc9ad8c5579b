// The suggestion for a mistyped command or setting name: the nearest known word, if it is near enough.

/**
 * The known word closest to `word` by edit distance (a transposition counts as one edit), when it
 * is close enough to be a typo: at most one edit for short words, two from five characters on.
 */
export function didYouMean(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const d = editDistance(word.toLowerCase(), candidate)
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  const limit = word.replace(/^-+/, '').length >= 5 ? 2 : 1
  return best !== word && bestDistance <= limit ? best : undefined
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = rows[i]!
      const up = rows[i - 1]!
      row[j] = Math.min(up[j]! + 1, row[j - 1]! + 1, up[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1)
    }
  }
  return rows[a.length]![b.length]!
}
