import type { FastifyBaseLogger } from 'fastify'
import { backendOptions, type CoreConfig } from '../config.ts'
import { SupabaseAuthClient } from '../core/backend.ts'
import type { RateLimitConfig } from '../ratelimit/config.ts'
import type { ServicesConfig } from '../services/config.ts'
import { runChecks } from './checks.ts'
import { serviceChecks } from './services.ts'
import { formatFindings, hasError, type Finding } from './findings.ts'

export interface DoctorSettings {
  core: CoreConfig
  rateLimit: RateLimitConfig | undefined
  publicUrl: string | undefined
  /** AUTHGATE_WORKERS: processes that must agree on the account keys. */
  workers?: number | undefined
  /** Supabase Auth's `GOTRUE_*` settings, where the operator gave them (the doctor's environment). */
  backendEnv?: Readonly<Record<string, string | undefined>> | undefined
  /** The services beside Auth (src/services/): each upstream checked too. */
  services?: ServicesConfig | undefined
}

/** The checks with a client of their own, closed afterwards. */
export async function diagnose(settings: DoctorSettings, probe: boolean): Promise<Finding[]> {
  // A few connections: the doctor sends one request at a time.
  const backend = new SupabaseAuthClient(backendOptions(settings.core, 4))
  try {
    const findings = await runChecks({
      config: settings.core,
      rateLimit: settings.rateLimit,
      publicUrl: settings.publicUrl,
      workers: settings.workers,
      backendEnv: settings.backendEnv,
      backend,
      probe,
    })
    if (settings.services !== undefined)
      findings.push(...(await serviceChecks(settings.services, backend, settings.core.backendTimeoutMs)))
    return findings
  } finally {
    await backend.close()
  }
}

/** `authgate doctor [--json] [--no-probe]`: prints the findings; resolves to the exit status (1 on an error). */
export async function runDoctor(
  args: readonly string[],
  settings: DoctorSettings,
  out: (text: string) => void,
): Promise<number> {
  const unknown = args.find((a) => a !== '--json' && a !== '--no-probe')
  if (unknown !== undefined) {
    out(`authgate doctor: unknown argument ${JSON.stringify(unknown)} (use --json, --no-probe)\n`)
    return 2
  }
  const findings = await diagnose(settings, !args.includes('--no-probe'))
  if (args.includes('--json')) {
    // Every finding has the four members docs/doctor.md shows: `fix` is null when nothing needs fixing.
    const all = findings.map((f) => ({ check: f.check, status: f.status, message: f.message, fix: f.fix ?? null }))
    out(JSON.stringify({ ok: !hasError(findings), findings: all }, null, 2) + '\n')
  } else out(formatFindings(findings))
  return hasError(findings) ? 1 : 0
}

/**
 * The same checks at start-up (without the probe, which spends requests): every warning and error
 * as a log line, so a misconfiguration shows where operators look. Never throws.
 */
export async function logStartupFindings(settings: DoctorSettings, log: Pick<FastifyBaseLogger, 'warn' | 'error'>) {
  try {
    for (const f of await diagnose(settings, false)) {
      if (f.status !== 'warn' && f.status !== 'error') continue
      log[f.status]({ check: f.check, ...(f.fix !== undefined ? { fix: f.fix } : {}) }, `doctor: ${f.message}`)
    }
  } catch (err) {
    log.warn({ error: (err as Error).message }, 'doctor: the start-up checks failed')
  }
}
