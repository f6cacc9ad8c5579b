import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { realisticDocuments } from './support/realistic-app.ts'

/**
 * The documents of an application shaped like the product (the real auth route table plus the
 * example application) pass the outside validators with zero errors, and openapi-typescript
 * turns each rendering into types that compile. Warnings are reported, not failed.
 */
const root = fileURLToPath(new URL('../../', import.meta.url))
const bin = (name: string) => join(root, 'node_modules', '.bin', name)
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const quietEnv = {
  ...process.env,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
  CI: '1',
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd: root, env: quietEnv, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

let dir = ''
const files: Record<'3.1' | '3.0', string> = { '3.1': '', '3.0': '' }

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'authgate-openapi-'))
  const { v31, v30 } = await realisticDocuments()
  files['3.1'] = join(dir, 'openapi-3.1.json')
  files['3.0'] = join(dir, 'openapi-3.0.json')
  await writeFile(files['3.1'], JSON.stringify(v31, null, 2))
  await writeFile(files['3.0'], JSON.stringify(v30, null, 2))
})
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

for (const version of ['3.1', '3.0'] as const) {
  test(`@redocly/cli lint (recommended) finds no error in the ${version} rendering`, async (t) => {
    const out = await run(bin('redocly'), [
      'lint',
      '--config',
      join(fixtures, 'redocly.yaml'),
      '--format',
      'json',
      files[version],
    ])
    const report = JSON.parse(out.stdout) as {
      totals: { errors: number; warnings: number }
      problems: Array<{ ruleId: string; severity: string; message: string }>
    }
    const errors = report.problems.filter((p) => p.severity === 'error')
    t.diagnostic(
      `redocly ${version}: ${report.totals.errors} errors, ${report.totals.warnings} warnings (${[...new Set(report.problems.map((p) => p.ruleId))].join(', ') || 'none'})`,
    )
    assert.deepEqual(
      errors.map((e) => `${e.ruleId}: ${e.message}`),
      [],
    )
    assert.equal(report.totals.errors, 0)
  })

  test(`@stoplight/spectral-cli lint (spectral:oas) finds no error in the ${version} rendering`, async (t) => {
    const out = await run(bin('spectral'), [
      'lint',
      '--ruleset',
      join(fixtures, '.spectral.yaml'),
      '--format',
      'json',
      '--quiet',
      files[version],
    ])
    const results = JSON.parse(out.stdout || '[]') as Array<{
      code: string
      severity: number
      message: string
      path: string[]
    }>
    const errors = results.filter((r) => r.severity === 0)
    const warnings = results.filter((r) => r.severity === 1)
    t.diagnostic(
      `spectral ${version}: ${errors.length} errors, ${warnings.length} warnings (${[...new Set(results.map((r) => r.code))].join(', ') || 'none'})`,
    )
    assert.deepEqual(
      errors.map((e) => `${e.code} at ${e.path.join('.')}: ${e.message}`),
      [],
    )
    assert.equal(out.code, 0, out.stderr)
  })
}

test('openapi-typescript turns both renderings into TypeScript that compiles', async () => {
  for (const version of ['3.1', '3.0'] as const) {
    const ts = join(dir, `types-${version}.ts`)
    const gen = await run(bin('openapi-typescript'), [files[version], '-o', ts])
    assert.equal(gen.code, 0, gen.stderr)
  }
  await writeFile(
    join(dir, 'use.ts'),
    `import type { paths as P31, components as C31 } from './types-3.1.ts'
import type { paths as P30, components as C30 } from './types-3.0.ts'
type Check<T extends true> = T
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
// The path parameter of the passkey routes is a required string in both renderings.
export type A = Check<Same<P31['/auth/passkeys/{id}']['delete']['parameters']['path']['id'], string>>
export type B = Check<Same<P30['/auth/passkeys/{id}']['delete']['parameters']['path']['id'], string>>
// Nullable fields stay nullable through the 3.0 conversion.
export type C = Check<Same<C31['schemas']['UserObject']['identities'], C30['schemas']['UserObject']['identities']>>
export type D = Check<Same<C31['schemas']['Todo']['title'], string>>
`,
  )
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(fixtures, 'tsconfig.generated.json'),
      compilerOptions: { allowImportingTsExtensions: true },
      include: ['*.ts'],
    }),
  )
  const tsc = await run(bin('tsc'), ['-p', join(dir, 'tsconfig.json')])
  assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr)
})
