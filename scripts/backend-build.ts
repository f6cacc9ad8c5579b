// Builds the Supabase Auth server that the end-to-end tests and `npm run backend:dev` run, at the
// commit the suite is written against. Usage: npm run backend:build -- --help
import { execFile, spawn } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { chmod, cp, mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { createGunzip } from 'node:zlib'
import {
  BUILD_DIR,
  BUILT_BINARY,
  findGo,
  isExecutable,
  SUPABASE_AUTH_COMMIT,
  SUPABASE_AUTH_GO_VERSION,
  SUPABASE_AUTH_MODULE,
} from '../e2e/support/supabase-auth-binary.ts'

const execFileAsync = promisify(execFile)

export const SOURCE_ENV = 'AUTHGATE_SUPABASE_AUTH_SRC'
const ARCHIVE_NAME = `supabase-auth-${SUPABASE_AUTH_COMMIT}.tar.gz`
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..')
/** The project's CI checks the repository out next to a `shared/` directory holding the archive. */
export const SIBLING_ARCHIVE = join(repoRoot, '..', 'shared', 'supabase-auth', ARCHIVE_NAME)
const STAMP = join(BUILD_DIR, `.built-${SUPABASE_AUTH_COMMIT}`)

const HELP = `Usage: npm run backend:build [-- --force]

Builds Supabase Auth (${SUPABASE_AUTH_MODULE} at commit ${SUPABASE_AUTH_COMMIT}) with Go into
${BUILT_BINARY}
and prints that path on the last line. The end-to-end tests and npm run backend:dev find it there.
A finished build of the same commit is reused; --force builds again.

The source, first that applies:
  1. ${SOURCE_ENV}=<file.tar.gz>  a source archive of that commit, e.g. GitHub's
     https://github.com/supabase/auth/archive/${SUPABASE_AUTH_COMMIT}.tar.gz
  2. ../shared/supabase-auth/${ARCHIVE_NAME} beside the clone
  3. the Go module ${SUPABASE_AUTH_MODULE}@${SUPABASE_AUTH_COMMIT} from your Go module proxy

Needs Go >= ${SUPABASE_AUTH_GO_VERSION} (on PATH or in /usr/local/go/bin); its dependencies come from the
Go module proxy. A cold build takes one to a few minutes.`

export type Source = { kind: 'archive'; path: string; from: string } | { kind: 'module' }

/** Which source to build from, given the environment and whether the sibling archive exists. */
export function chooseSource(env: NodeJS.ProcessEnv, siblingArchiveExists: boolean): Source {
  const given = env[SOURCE_ENV]
  if (given !== undefined && given !== '') return { kind: 'archive', path: resolve(given), from: SOURCE_ENV }
  if (siblingArchiveExists) return { kind: 'archive', path: SIBLING_ARCHIVE, from: 'the archive beside the clone' }
  return { kind: 'module' }
}

/**
 * The commit a `git archive` tarball (GitHub's archives are made that way) records in its pax
 * global header, or undefined when it records none. Reads only the first blocks.
 */
export async function archiveCommit(path: string): Promise<string | undefined> {
  const head = await new Promise<Buffer>((resolvePromise, reject) => {
    const chunks: Buffer[] = []
    let length = 0
    const input = createReadStream(path)
    const gunzip = createGunzip()
    const finish = (): void => {
      input.destroy()
      gunzip.destroy()
      resolvePromise(Buffer.concat(chunks))
    }
    input.once('error', reject)
    gunzip.once('error', reject)
    gunzip.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      length += chunk.length
      if (length >= 1024) finish()
    })
    gunzip.once('end', finish)
    input.pipe(gunzip)
  })
  if (head.length < 1024 || head.toString('latin1', 156, 157) !== 'g') return undefined
  const size = parseInt(head.toString('latin1', 124, 136).replace(/\0.*$/s, '').trim(), 8)
  if (!Number.isInteger(size) || size <= 0 || size > 512) return undefined
  // Records are "<length> <key>=<value>\n"; git writes the commit as `comment`.
  const match = /(?:^|\n)\d+ comment=([0-9a-f]{40})\n/.exec(head.toString('latin1', 512, 512 + size))
  return match?.[1]
}

/** What to tell the user when the Go toolchain could not fetch the module. */
export function moduleFailureAdvice(goError: string, env: NodeJS.ProcessEnv): string {
  const proxy = env.GOPROXY ?? 'https://proxy.golang.org,direct'
  const refused = /\b(403|404|410)\b|not available|not found/i.test(goError)
  return [
    `could not fetch ${SUPABASE_AUTH_MODULE}@${SUPABASE_AUTH_COMMIT} as a Go module:`,
    `  ${goError.trim().split('\n').join('\n  ')}`,
    refused
      ? `Your Go module proxy (${proxy}) does not serve that commit. Either:`
      : 'Check your network and Go settings, or:',
    `  - download a source archive of the commit and build from it:`,
    `      curl -fLo /tmp/${ARCHIVE_NAME} https://github.com/supabase/auth/archive/${SUPABASE_AUTH_COMMIT}.tar.gz`,
    `      ${SOURCE_ENV}=/tmp/${ARCHIVE_NAME} npm run backend:build`,
    `  - or let Go fetch it from GitHub itself (needs git): GOPRIVATE=${SUPABASE_AUTH_MODULE} npm run backend:build`,
  ].join('\n')
}

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // Go's progress goes to stderr so that stdout's last line stays the binary's path.
    const child = spawn(command, args, { ...options, stdio: ['ignore', process.stderr, process.stderr] })
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (code === 0) resolvePromise()
      else reject(new Error(`${command} ${args.join(' ')} failed (${code ?? signal})`))
    })
  })
}

function goEnv(go: string): NodeJS.ProcessEnv {
  const goflags = [process.env.GOFLAGS ?? '', '-mod=mod'].join(' ').trim()
  // The build needs no C compiler; the module cache and build cache stay Go's own (reused across builds).
  return { ...process.env, CGO_ENABLED: '0', GOFLAGS: goflags, PATH: `${dirname(go)}:${process.env.PATH ?? ''}` }
}

/**
 * Refuses an archive that is missing, not a .tar.gz, or of another commit, before anything of an
 * earlier build is removed. Returns the commit it records, if any.
 */
export async function checkArchive(archive: string): Promise<string | undefined> {
  try {
    await stat(archive)
  } catch {
    throw new Error(`${archive} does not exist (${SOURCE_ENV} must name a .tar.gz source archive)`)
  }
  const commit = await archiveCommit(archive).catch((error: unknown) => {
    throw new Error(`${archive} is not a gzip-compressed tar archive: ${String(error)}`)
  })
  if (commit !== undefined && !commit.startsWith(SUPABASE_AUTH_COMMIT)) {
    throw new Error(
      `${archive} holds commit ${commit}, not ${SUPABASE_AUTH_COMMIT}: the suite is written against the latter`,
    )
  }
  return commit
}

/** Fetches the module at the commit into Go's module cache and returns its directory there. */
async function downloadModule(go: string): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), 'authgate-go-'))
  try {
    // Outside any module, so nothing of the caller's directory takes part. On failure go still
    // prints the JSON, with the reason in Error.
    const args = ['mod', 'download', '-json', `${SUPABASE_AUTH_MODULE}@${SUPABASE_AUTH_COMMIT}`]
    const stdout = await execFileAsync(go, args, { cwd: scratch, env: goEnv(go), maxBuffer: 1 << 20 }).then(
      (result) => result.stdout,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    )
    let info: { Dir?: string; Error?: string } = {}
    try {
      info = JSON.parse(stdout) as typeof info
    } catch {
      // not JSON: what go printed is the reason
    }
    if (info.Dir === undefined) throw new Error(moduleFailureAdvice(info.Error ?? stdout, process.env))
    return info.Dir
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    console.log(HELP)
    return 0
  }

  if (!values.force && (await isExecutable(BUILT_BINARY))) {
    try {
      await stat(STAMP)
      console.error(`backend:build: reusing the build of ${SUPABASE_AUTH_COMMIT} (--force builds again)`)
      console.log(BUILT_BINARY)
      return 0
    } catch {
      // an unfinished or older build: build again
    }
  }

  const go = await findGo()
  if (go === undefined) {
    throw new Error(
      `Go is not installed (Supabase Auth is a Go program): install Go >= ${SUPABASE_AUTH_GO_VERSION} ` +
        '(https://go.dev/dl/) and run this again; it is looked for on PATH and in /usr/local/go/bin',
    )
  }

  const siblingExists = await stat(SIBLING_ARCHIVE).then(
    () => true,
    () => false,
  )
  const source = chooseSource(process.env, siblingExists)
  // Everything that can be refused is checked before an earlier build is removed.
  let moduleDir = ''
  if (source.kind === 'archive') {
    if ((await checkArchive(source.path)) === undefined) {
      console.error(`backend:build: ${source.path} records no commit; assuming ${SUPABASE_AUTH_COMMIT}`)
    }
  } else {
    console.error(`backend:build: fetching ${SUPABASE_AUTH_MODULE}@${SUPABASE_AUTH_COMMIT} from the Go module proxy`)
    moduleDir = await downloadModule(go)
  }

  const src = join(BUILD_DIR, 'src')
  await rm(STAMP, { force: true })
  await rm(src, { recursive: true, force: true })
  await mkdir(join(BUILD_DIR, 'bin'), { recursive: true })
  const started = Date.now()
  if (source.kind === 'archive') {
    console.error(`backend:build: building ${source.path} (${source.from}) with ${go}`)
    await mkdir(src, { recursive: true })
    await execFileAsync('tar', ['xzf', source.path, '-C', src, '--strip-components=1'])
  } else {
    console.error(`backend:build: building ${moduleDir} with ${go}`)
    // The module has replace directives, so `go install module@commit` is refused: it is built as
    // the main module of a writable copy (the module cache is read-only) instead.
    await cp(moduleDir, src, { recursive: true })
    await execFileAsync('chmod', ['-R', 'u+w', src])
  }

  const partial = `${BUILT_BINARY}.partial`
  const ldflags = `-s -w -X ${SUPABASE_AUTH_MODULE}/internal/utilities.Version=v2.196.0-${SUPABASE_AUTH_COMMIT}`
  await run(go, ['build', '-buildvcs=false', '-trimpath', '-ldflags', ldflags, '-o', partial, '.'], {
    cwd: src,
    env: goEnv(go),
  })
  await chmod(partial, 0o755)
  await rename(partial, BUILT_BINARY)
  await writeFile(STAMP, `${source.kind === 'archive' ? source.path : 'go module proxy'}\n`)
  console.error(`backend:build: built in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  console.log(BUILT_BINARY)
  return 0
}

// Run only as a script: the tests import the functions above.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`backend:build: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    },
  )
}
