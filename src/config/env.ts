/**
 * The pieces every configuration reader shares: the error, reading one variable, integers in a
 * range. The core, rate-limit and documentation settings all read the environment through these.
 */

import { AuthgateConfigError } from '../core/config-error.ts'

export { AuthgateConfigError }

export type Env = Record<string, string | undefined>

/**
 * The words that turn off a feature, a limit or a served path (`AUTHGATE_METRICS_PATH=off`,
 * `AUTHGATE_EMAIL_BUDGET=none`), in every setting that can be off: one vocabulary, any case
 * (docs/decisions.md, D85). `0` is not among them: zero is a number, and says "none" only where a
 * setting documents it (a duration of 0 for no limit).
 */
export const OFF_WORDS: ReadonlySet<string> = new Set(['off', 'none', 'false', 'no', 'disabled'])

/** Whether a value is one of the words for off. */
export function isOff(raw: string): boolean {
  return OFF_WORDS.has(raw.trim().toLowerCase())
}

/** The words for true and for false, in every yes-or-no setting: every word for off is false. */
export const TRUE_WORDS: ReadonlySet<string> = new Set(['true', 'on', 'yes', '1', 'enabled'])
export const FALSE_WORDS: ReadonlySet<string> = new Set([...OFF_WORDS, '0'])

/** A yes-or-no setting in any of its words; `expected` says what the error offers. */
export function parseBoolean(variable: string, raw: string, expected = 'true or false'): boolean {
  const v = raw.trim().toLowerCase()
  if (TRUE_WORDS.has(v)) return true
  if (FALSE_WORDS.has(v)) return false
  throw new AuthgateConfigError(variable, `expected ${expected}, got ${JSON.stringify(raw)}`)
}

/** The variable's value, trimmed; undefined when unset or blank. */
export function envValue(env: Env, name: string): string | undefined {
  const v = env[name]
  if (v === undefined) return undefined
  const t = v.trim()
  return t === '' ? undefined : t
}

/** A decimal integer in [min, max]; both failures name the range. */
export function parseIntIn(variable: string, raw: string, min: number, max: number): number {
  const s = raw.trim()
  if (!/^[+-]?\d+$/.test(s))
    throw new AuthgateConfigError(variable, `expected an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`)
  const n = Number(s)
  if (n < min || n > max) throw new AuthgateConfigError(variable, `must be between ${min} and ${max}, got ${n}`)
  return n
}
