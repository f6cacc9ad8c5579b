/**
 * The pieces every configuration reader shares: the error, reading one variable, integers in a
 * range. The core, rate-limit and documentation settings all read the environment through these.
 */

import { AuthgateConfigError } from '../core/config-error.ts'

export { AuthgateConfigError }

export type Env = Record<string, string | undefined>

/** The words that turn a served path or a feature off (`AUTHGATE_METRICS_PATH=off`). */
export const OFF_WORDS: ReadonlySet<string> = new Set(['off', 'false', 'none', 'disabled'])

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
