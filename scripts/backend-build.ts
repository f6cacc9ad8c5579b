// Builds the Supabase Auth server that the end-to-end tests and `npm run dev` run, at the commit the
// suite is written against, from the upstream's own source archive. Usage: npm run backend:build -- --help
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import {
  BINARY_ENV,
  buildDir,
  builtBinary,
  findGo,
  isExecutable,
  SUPABASE_AUTH_COMMIT,
  SUPABASE_AUTH_GO_VERSION,
  SUPABASE_AUTH_VERSION,
} from './supabase-auth/binary.ts'
import { atLeast, buildFromArchive, goVersion, SourceUnavailableError } from './supabase-auth/build.ts'
import { SOURCE_ENV, UPSTREAM_ARCHIVE, waysOut } from './supabase-auth/ways-out.ts'

const execFileAsync = promisify(execFile)

export { SOURCE_ENV, UPSTREAM_ARCHIVE }
/**
 * The digest (treeDigest) of that commit's files, pinned: an archive whose files differ in any byte
 * is refused, wherever it came from. Any `git archive` of the commit gives the same digest.
 */
export const SUPABASE_AUTH_TREE_DIGEST = 'sha256:6837d7ada36f350938da9e999f0e5ec614ea0a01600c8702f7f593fc80277994'

const HELP = `Usage: npm run backend:build [-- --force]

Builds Supabase Auth (github.com/supabase/auth at commit ${SUPABASE_AUTH_COMMIT.slice(0, 12)}) into
${builtBinary()}
and prints that path on the last line. The end-to-end tests and npm run dev find it there, from any
clone on this machine. A finished build is reused; --force builds again.

The source is the upstream's own archive of that commit,
  ${UPSTREAM_ARCHIVE}
or ${SOURCE_ENV}=<file.tar.gz or URL> for a copy of it you already have. Either way its files are
checked against the digest pinned here before anything is built, and built with your Go
(>= ${SUPABASE_AUTH_GO_VERSION}, on PATH or in /usr/local/go/bin); its dependencies come from your Go
module proxy. A cold build takes one to a few minutes.

${BINARY_ENV}=/path/to/supabase-auth (a server built or installed elsewhere) needs no build: this
then prints that path.`

/** Where the source comes from: the given archive or URL, else the upstream's. */
export function chooseSource(env: NodeJS.ProcessEnv): string {
  const given = env[SOURCE_ENV]
  if (given === undefined || given === '') return UPSTREAM_ARCHIVE
  return /^https?:\/\//i.test(given) ? given : resolve(given)
}

/** The go command, refused with a message that says what to do when missing or too old. */
export async function usableGo(
  env: NodeJS.ProcessEnv = process.env,
  options: { findGo?: (env: NodeJS.ProcessEnv) => Promise<string | undefined> } = {},
): Promise<string> {
  const go = await (options.findGo ?? findGo)(env)
  if (go === undefined) {
    throw new Error(
      'Go is not installed (Supabase Auth is a Go program; looked on PATH and in /usr/local/go/bin).\n' +
        waysOut({ needGo: true, needArchive: false }),
    )
  }
  const { stdout } = await execFileAsync(go, ['version'])
  const version = goVersion(stdout)
  if (version === undefined || !atLeast(version, SUPABASE_AUTH_GO_VERSION)) {
    throw new Error(
      `${go} is ${stdout.trim()}; Supabase Auth needs Go >= ${SUPABASE_AUTH_GO_VERSION}.\n` +
        waysOut({ needGo: true, needArchive: false }),
    )
  }
  return go
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
  const configured = process.env[BINARY_ENV]
  if (configured !== undefined && configured !== '' && configured !== 'none') {
    if (!(await isExecutable(configured))) throw new Error(`${BINARY_ENV}=${configured} is not an executable file`)
    console.error(`backend:build: ${BINARY_ENV} names the server to run; nothing to build`)
    console.log(configured)
    return 0
  }

  const binary = builtBinary()
  if (!values.force && (await isExecutable(binary))) {
    const stamp = await readFile(`${buildDir()}/.source`, 'utf8').catch(() => '')
    if (stamp.includes(SUPABASE_AUTH_TREE_DIGEST)) {
      console.error(`backend:build: reusing the build at ${binary} (--force builds again)`)
      console.log(binary)
      return 0
    }
  }

  const go = await usableGo()
  const source = chooseSource(process.env)
  console.error(`backend:build: Supabase Auth ${SUPABASE_AUTH_VERSION} from ${source}`)
  const built = await buildFromArchive({
    source,
    digest: SUPABASE_AUTH_TREE_DIGEST,
    dir: buildDir(),
    binaryName: 'supabase-auth',
    go,
    buildFlags: ['-ldflags', `-s -w -X github.com/supabase/auth/internal/utilities.Version=${SUPABASE_AUTH_VERSION}`],
    log: (line) => console.error(`backend:build: ${line}`),
  }).catch((error: unknown) => {
    // The archive or Go's modules could not be fetched (offline, a proxy): what else there is.
    if (error instanceof SourceUnavailableError) throw new Error(`${error.message}\n${waysOut()}`, { cause: error })
    throw error
  })
  console.log(built)
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
