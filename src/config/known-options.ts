import { AuthgateConfigError } from '../core/config-error.ts'
import { didYouMean } from '../core/did-you-mean.ts'

/**
 * Refuses an options object that names something the reader does not read: a typo would
 * otherwise leave the option at its default without a word. `where` is the object's own name as
 * the caller wrote it (`config.`, `rateLimit.`), so the error names the option as given; `why`
 * may explain a name that is known elsewhere (a service option given to the plugin).
 */
export function refuseUnknownOptions(
  given: object | undefined,
  known: readonly string[],
  where = '',
  why?: (key: string) => string | undefined,
): void {
  if (given === undefined || given === null) return
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue
    const near = didYouMean(key, known)
    const reason = why?.(key)
    throw new AuthgateConfigError(
      where + key,
      reason ??
        (near !== undefined
          ? `unknown option; did you mean ${where}${near}?`
          : `unknown option (known: ${known.join(', ')})`),
    )
  }
}
