import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/**
 * Builds a Go server from a source archive: downloaded (or read from a file), unpacked, checked
 * against a pinned digest of its files, then built with the caller's Go. Nothing of an earlier
 * build is replaced until the new one is complete, and nothing is built from a tree that does not
 * match the digest.
 */

/** An archive larger than this is not a source archive of a Go server. */
const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024

/**
 * The digest of a source tree: SHA-256 over one line per regular file, `<sha256 of its bytes>  <path>\n`,
 * the paths relative to the tree and sorted. The archive's own bytes are not pinned, since the same
 * commit's archive can be compressed differently from one day to the next; its files cannot.
 */
export async function treeDigest(root: string): Promise<string> {
  const files: string[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) await walk(path)
      else if (entry.isFile()) files.push(relative(root, path).split('\\').join('/'))
      else throw new Error(`${relative(root, path)} is neither a file nor a directory`)
    }
  }
  await walk(root)
  files.sort()
  const lines = createHash('sha256')
  for (const file of files) {
    const sum = createHash('sha256')
      .update(await readFile(join(root, file)))
      .digest('hex')
    lines.update(`${sum}  ${file}\n`)
  }
  return `sha256:${lines.digest('hex')}`
}

export interface BuildOptions {
  /** An http(s) URL of a .tar.gz source archive (one top-level folder), or the path of one. */
  source: string
  /** treeDigest of the unpacked archive (its top-level folder removed); anything else is refused. */
  digest: string
  /** Where the build goes: `<dir>/<binaryName>`, and the verified source in `<dir>/src`. */
  dir: string
  binaryName: string
  /** The go command. */
  go: string
  /** Extra `go build` flags, e.g. -ldflags. */
  buildFlags?: string[]
  /** One line of progress at a time. */
  log?: (line: string) => void
}

export const isUrl = (source: string): boolean => /^https?:\/\//i.test(source)

/** What the build needed from the network could not be fetched: the archive, or Go's modules. */
export class SourceUnavailableError extends Error {}

/** How often a long step says it is still going. */
const PROGRESS_EVERY_MS = 5000

/** Downloads `url` into `file`, with a progress line every few seconds of a long download. */
export async function download(url: string, file: string, log: (line: string) => void): Promise<void> {
  let response: Response
  try {
    response = await fetch(url, { redirect: 'follow' })
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
    throw new SourceUnavailableError(`could not download ${url}${cause}`, { cause: error })
  }
  if (!response.ok || response.body === null) {
    throw new SourceUnavailableError(`could not download ${url}: HTTP ${response.status}`)
  }
  const declared = Number(response.headers.get('content-length') ?? NaN)
  let received = 0
  let lastSaid = Date.now()
  const mb = (n: number): string => (n / 1e6).toFixed(1)
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>)
  body.on('data', (chunk: Buffer) => {
    received += chunk.length
    if (received > MAX_ARCHIVE_BYTES) body.destroy(new Error(`${url} is larger than ${mb(MAX_ARCHIVE_BYTES)} MB`))
    if (Date.now() - lastSaid >= 2000) {
      lastSaid = Date.now()
      log(`downloading: ${mb(received)} MB${Number.isFinite(declared) ? ` of ${mb(declared)} MB` : ''}`)
    }
  })
  await pipeline(body, createWriteStream(file))
  log(`downloaded ${mb(received)} MB from ${url}`)
}

/**
 * Runs a Go command. Its standard error goes to `line`, one line at a time (`go build -v` names each
 * package there as it compiles it); its standard output is returned. The caller's stdout stays its own.
 */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  line: (text: string) => void,
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let partial = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n')
      partial = lines.pop() ?? ''
      for (const text of lines) line(text)
    })
    child.once('error', reject)
    child.once('close', (code, signal) => {
      if (partial !== '') line(partial)
      if (code === 0) resolvePromise(stdout)
      else reject(new Error(`${command} ${args.join(' ')} failed (${code ?? signal})`))
    })
  })
}

/** Calls `say` every PROGRESS_EVERY_MS until the returned function is called. */
function every(say: () => void): () => void {
  const timer = setInterval(say, PROGRESS_EVERY_MS)
  return () => clearInterval(timer)
}

const seconds = (since: number): string => `${Math.round((Date.now() - since) / 1000)} s`

/** A package path as `go build -v` prints it; anything else on its stderr is the compiler's message. */
const PACKAGE_LINE = /^[\w.~-]+(\/[\w.~+-]+)*$/

/**
 * `go list -deps` (which fetches the modules the build needs from the module proxy), then `go build -v`:
 * a line every few seconds with the time so far and, while compiling, the packages compiled out of
 * those the program is made of (a warm build cache compiles few of them).
 */
async function goBuild(options: BuildOptions, src: string, binary: string, log: (line: string) => void) {
  const started = Date.now()
  const env = {
    ...process.env,
    // No C compiler needed; the toolchain is the caller's own (no download of another one), and
    // the module and build caches stay Go's (reused across builds).
    CGO_ENABLED: '0',
    GOTOOLCHAIN: 'local',
    PATH: `${dirname(options.go)}:${process.env.PATH ?? ''}`,
  }
  const messages: string[] = []
  const passOn = (text: string) => {
    messages.push(text)
    process.stderr.write(`${text}\n`)
  }
  log("fetching the Go modules it needs (Go's module cache, else the module proxy)")
  let stop = every(() => log(`fetching Go modules: ${seconds(started)} so far`))
  let packages: number
  try {
    const listed = await run(options.go, ['list', '-deps', '-f', '{{.ImportPath}}', '.'], { cwd: src, env }, passOn)
    packages = listed.split('\n').filter((p) => p !== '').length
  } catch (error) {
    throw new SourceUnavailableError(
      `Go could not get the modules Supabase Auth needs (${messages.slice(-1)[0] ?? (error as Error).message}); ` +
        'they come from GOPROXY (https://proxy.golang.org by default) unless already in your module cache',
      { cause: error },
    )
  } finally {
    stop()
  }
  log(`compiling ${packages} packages with ${options.go} (${seconds(started)} so far)`)
  let compiled = 0
  stop = every(() => log(`compiling: ${compiled} of ${packages} packages compiled, ${seconds(started)} so far`))
  try {
    await run(
      options.go,
      ['build', '-v', '-buildvcs=false', '-trimpath', ...(options.buildFlags ?? []), '-o', binary, '.'],
      { cwd: src, env },
      (text) => (PACKAGE_LINE.test(text) ? compiled++ : passOn(text)),
    )
  } finally {
    stop()
  }
  log(`built in ${seconds(started)} (${compiled} of ${packages} packages compiled, the rest from Go's build cache)`)
}

/** Builds from the archive and returns the binary's path. */
export async function buildFromArchive(options: BuildOptions): Promise<string> {
  const log = options.log ?? (() => {})
  await mkdir(options.dir, { recursive: true })
  // Beside the destination, so that the finished pieces move into place by rename.
  const work = await mkdtemp(join(options.dir, '.work-'))
  try {
    const archive = join(work, 'source.tar.gz')
    if (isUrl(options.source)) await download(options.source, archive, log)
    else
      await copyFile(options.source, archive).catch((error: unknown) => {
        throw new SourceUnavailableError(`could not read ${options.source}: ${(error as Error).message}`, {
          cause: error,
        })
      })

    const src = join(work, 'src')
    await mkdir(src)
    log(`unpacking ${isUrl(options.source) ? 'the archive' : options.source}`)
    try {
      await execFileAsync('tar', ['xzf', archive, '-C', src, '--strip-components=1', '--no-same-owner'])
    } catch (error) {
      throw new Error(`${options.source} is not a gzip-compressed tar archive: ${(error as Error).message.trim()}`, {
        cause: error,
      })
    }
    const digest = await treeDigest(src)
    if (digest !== options.digest) {
      throw new Error(
        `${options.source} does not hold the pinned source: its files' digest is ${digest}, expected ${options.digest}`,
      )
    }
    log(`source verified (${digest})`)

    const binary = join(work, options.binaryName)
    await goBuild(options, src, binary, log)
    await chmod(binary, 0o755)

    const target = join(options.dir, options.binaryName)
    await rm(join(options.dir, 'src'), { recursive: true, force: true })
    await rename(src, join(options.dir, 'src'))
    await rename(binary, target)
    await writeFile(join(options.dir, '.source'), `${options.source}\n${digest}\n`)
    return target
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** The `go` line of a Go version string, as numbers: `go version go1.26.8 linux/amd64` → [1, 26, 8]. */
export function goVersion(output: string): number[] | undefined {
  const match = /go(\d+)\.(\d+)(?:\.(\d+))?/.exec(output)
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined
}

export function atLeast(version: number[], wanted: string): boolean {
  const want = wanted.split('.').map(Number)
  for (let i = 0; i < want.length; i++) {
    const have = version[i] ?? 0
    if (have !== want[i]) return have > want[i]!
  }
  return true
}
