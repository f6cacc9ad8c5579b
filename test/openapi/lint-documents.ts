/**
 * The OpenAPI documents checked by the outside tools, once each: the documents of an application shaped
 * like the product (the real auth route table plus the example application) are written to a temporary
 * directory, then @redocly/cli (recommended) and @stoplight/spectral-cli (spectral:oas) lint both
 * renderings in one run each, and openapi-typescript turns each rendering into types that must compile.
 * Any error fails (exit 1); warnings are counted and printed. A step of `npm test` (scripts/test.ts),
 * run apart from the test files so that the tools run once and outside the coverage measurement.
 *
 *   node --conditions=authgate-source test/openapi/lint-documents.ts
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { plainEnvironment } from '../support/plain-environment.ts'
import { realisticDocuments } from './support/realistic-app.ts'

const root = fileURLToPath(new URL('../../', import.meta.url))
const fixtures = join(root, 'test', 'openapi', 'fixtures')
const bin = (name: string): string => join(root, 'node_modules', '.bin', name)

// The tools are plain programs here: no coverage collection, no test reporters inherited from a runner.
const toolEnv = plainEnvironment({
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
  CI: '1',
})

interface Run {
  code: number
  stdout: string
  stderr: string
}

function run(cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd: root, env: toolEnv, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 },
      (err, stdout, stderr) => {
        const code =
          err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/** What one tool found: the errors (each a line naming the document) and how many warnings. */
export interface Findings {
  tool: string
  errors: string[]
  warnings: number
  rules: string[]
}

/** The JSON objects of a text that holds several one after the other (`{…}{…}`). */
export function jsonObjects(text: string): unknown[] {
  const values: unknown[] = []
  let depth = 0
  let start = -1
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{') {
      if (depth++ === 0) start = i
    } else if (c === '}' && --depth === 0) values.push(JSON.parse(text.slice(start, i + 1)))
  }
  return values
}

/** redocly prints one JSON report per document, one after the other. */
export function redoclyFindings(out: Run): Findings {
  const reports = jsonObjects(out.stdout) as Array<{
    totals: { errors: number; warnings: number }
    problems: Array<{
      ruleId: string
      severity: string
      message: string
      location?: Array<{ source?: { ref?: string } }>
    }>
  }>
  const problems = reports.flatMap((report) => report.problems)
  const errors = problems
    .filter((p) => p.severity === 'error')
    .map((p) => `${basename(p.location?.[0]?.source?.ref ?? '?')}: ${p.ruleId}: ${p.message}`)
  const counted = reports.reduce((sum, report) => sum + report.totals.errors, 0)
  if (reports.length === 0 || (counted > 0 && errors.length === 0) || (out.code !== 0 && errors.length === 0)) {
    errors.push(`redocly ended with ${out.code} and reports ${counted} errors: ${out.stderr || out.stdout}`)
  }
  return {
    tool: '@redocly/cli lint (recommended)',
    errors,
    warnings: reports.reduce((sum, report) => sum + report.totals.warnings, 0),
    rules: [...new Set(problems.map((p) => p.ruleId))],
  }
}

export function spectralFindings(out: Run): Findings {
  let results: Array<{ code: string; severity: number; message: string; path: string[]; source?: string }>
  try {
    results = JSON.parse(out.stdout || '[]')
  } catch {
    return {
      tool: 'spectral',
      errors: [`spectral printed no report (${out.code}): ${out.stderr}`],
      warnings: 0,
      rules: [],
    }
  }
  const errors = results
    .filter((r) => r.severity === 0)
    .map((r) => `${basename(r.source ?? '?')}: ${r.code} at ${r.path.join('.')}: ${r.message}`)
  if (out.code !== 0 && errors.length === 0) errors.push(`spectral ended with ${out.code}: ${out.stderr}`)
  return {
    tool: '@stoplight/spectral-cli lint (spectral:oas)',
    errors,
    warnings: results.filter((r) => r.severity === 1).length,
    rules: [...new Set(results.map((r) => r.code))],
  }
}

/** redocly and spectral, each run once over every file given. */
export function lintRenderings(files: string[]): Array<Promise<Findings>> {
  return [
    run(bin('redocly'), ['lint', '--config', join(fixtures, 'redocly.yaml'), '--format', 'json', ...files]).then(
      redoclyFindings,
    ),
    run(bin('spectral'), [
      'lint',
      '--ruleset',
      join(fixtures, '.spectral.yaml'),
      '--format',
      'json',
      '--quiet',
      ...files,
    ]).then(spectralFindings),
  ]
}

/** openapi-typescript for each rendering, then one compile of types used from both. */
async function generatedTypes(dir: string, files: Record<'3.1' | '3.0', string>): Promise<Findings> {
  const errors: string[] = []
  const generated = await Promise.all(
    (['3.1', '3.0'] as const).map(async (version) => ({
      version,
      out: await run(bin('openapi-typescript'), [files[version], '-o', join(dir, `types-${version}.ts`)]),
    })),
  )
  for (const { version, out } of generated) {
    if (out.code !== 0) errors.push(`openapi-typescript ${version}: ${out.stderr || out.stdout}`)
  }
  if (errors.length === 0) {
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
    if (tsc.code !== 0) errors.push(`tsc over the generated types: ${tsc.stdout}${tsc.stderr}`)
  }
  return { tool: 'openapi-typescript (3.1 and 3.0) and tsc over the types', errors, warnings: 0, rules: [] }
}

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'authgate-openapi-'))
  try {
    const { v31, v30 } = await realisticDocuments()
    const files = { '3.1': join(dir, 'openapi-3.1.json'), '3.0': join(dir, 'openapi-3.0.json') }
    await writeFile(files['3.1'], JSON.stringify(v31, null, 2))
    await writeFile(files['3.0'], JSON.stringify(v30, null, 2))
    const both = [files['3.1'], files['3.0']]

    const findings = await Promise.all([...lintRenderings(both), generatedTypes(dir, files)])
    let failed = false
    for (const { tool, errors, warnings, rules } of findings) {
      const seen = rules.length > 0 ? ` (${rules.join(', ')})` : ''
      console.log(
        `${errors.length === 0 ? 'ok  ' : 'FAIL'} ${tool}: ${errors.length} errors, ${warnings} warnings${seen}`,
      )
      for (const error of errors) console.log(`       ${error}`)
      failed ||= errors.length > 0
    }
    return failed ? 1 : 0
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main()
