/**
 * The pieces every configuration reader shares: the error, reading one variable, integers in a
 * range. The core, rate-limit and documentation settings all read the environment through these.
 */
export class ConfigError extends Error {
  readonly variable: string
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

export type Env = Record<string, string | undefined>

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
    throw new ConfigError(variable, `expected an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`)
  const n = Number(s)
  if (n < min || n > max) throw new ConfigError(variable, `must be between ${min} and ${max}, got ${n}`)
  return n
}
