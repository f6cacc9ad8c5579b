// The suggestion for a mistyped command or setting name: the nearest known word, if it is near enough.

/**
 * The known word closest to `word` by edit distance (a transposition counts as one edit), when it
 * is close enough to be a typo: at most one edit for short words, two from five characters on.
 */
export function didYouMean(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const d = editDistance(word, candidate)
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  const limit = word.replace(/^-+/, '').length >= 5 ? 2 : 1
  return best !== word && bestDistance <= limit ? best : undefined
}

/** Optimal string alignment distance (Levenshtein with adjacent transpositions), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toUpperCase()
  const t = b.toUpperCase()
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...Array<number>(t.length).fill(0)])
  for (let j = 1; j <= t.length; j++) d[0]![j] = j
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1)
      d[i]![j] = v
    }
  }
  return d[s.length]![t.length]!
}
