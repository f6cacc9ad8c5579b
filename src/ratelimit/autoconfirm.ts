import type { SupabaseAuthClient } from '../core/backend.ts'
import { isRecord } from '../core/is-record.ts'

const FRESH_MS = 60_000

/**
 * Whether Supabase Auth confirms sign-ups of a channel on its own (then a sign-up sends no
 * message and draws on no budget), from its `/settings`, asked at most once a minute. Undefined
 * while unknown (backend down): the sign-up then counts, erring towards the budget.
 */
export function autoconfirmLookup(
  backend: Pick<SupabaseAuthClient, 'fetch' | 'resolve'>,
  now: () => number = () => performance.now(),
): (channel: 'email' | 'sms') => Promise<boolean | undefined> {
  let known: { at: number; email: boolean | undefined; sms: boolean | undefined } | undefined
  let pending: Promise<void> | undefined
  const refresh = async () => {
    try {
      const response = await backend.fetch(backend.resolve('/settings'), { signal: AbortSignal.timeout(2000) })
      const ok = response.status >= 200 && response.status < 300
      const body: unknown = ok ? await response.json() : await response.body?.cancel()
      if (!isRecord(body)) throw new Error(`status ${response.status}`)
      const flag = (v: unknown) => (typeof v === 'boolean' ? v : undefined)
      known = { at: now(), email: flag(body.mailer_autoconfirm), sms: flag(body.phone_autoconfirm) }
    } catch {
      known = { at: now(), email: undefined, sms: undefined }
    }
  }
  return async (channel) => {
    if (known === undefined || now() - known.at >= FRESH_MS) {
      pending ??= refresh().finally(() => (pending = undefined))
      await pending
    }
    return known?.[channel]
  }
}
