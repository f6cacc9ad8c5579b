/**
 * The Go oracle (test/oracle/go/): built with the Go toolchain into a temporary directory and run as
 * one process, asked one raw request per line. Its answers are what Supabase Auth's standard
 * library reads from the request: the route struct's fields or the decode error, the query's first
 * values, the form, the Basic credentials.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** A raw request, as a client sends it. */
export interface RawRequest {
  method: string
  /** The request target: path and query, as sent. */
  target: string
  headers: [string, string][]
  body: Buffer
}

export interface GoReading {
  request_error?: string
  /** The route struct after `json.Unmarshal` (every field; zero values where absent), or null. */
  fields: Record<string, unknown> | null
  decode_error?: string
  /** No struct reads the body (a grant type Supabase Auth does not know). */
  no_struct?: boolean
  /** `gotrue_meta_security.captcha_token` as the CAPTCHA check decodes it, null when it cannot. */
  captcha: string | null
  query: Record<string, string>
  /** `FormValue`: the form body's first values, then the query's. */
  form: Record<string, string>
  basic: {
    user: string
    pass: string
    unescaped_user?: string
    unescaped_pass?: string
    unescape_error?: string
  } | null
  /** The Content-Type's media type as `mime.ParseMediaType` reads it; "" when it cannot. */
  media_type: string
}

const SOURCE = fileURLToPath(new URL('./go/', import.meta.url))

/** The Go toolchain: GO, else `go` on the PATH, else /usr/local/go/bin/go; undefined when none runs. */
export function goBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const candidate of [env.GO, 'go', '/usr/local/go/bin/go']) {
    if (!candidate) continue
    const probe = spawnSync(candidate, ['version'], { stdio: 'ignore' })
    if (probe.status === 0) return candidate
  }
  return undefined
}

export class GoOracle {
  readonly #child: ChildProcessWithoutNullStreams
  readonly #dir: string
  readonly #waiting: Array<(line: string) => void> = []

  private constructor(binary: string, dir: string) {
    this.#dir = dir
    this.#child = spawn(binary, [], { stdio: 'pipe' })
    createInterface({ input: this.#child.stdout }).on('line', (line) => this.#waiting.shift()?.(line))
    this.#child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk))
  }

  /** Builds the oracle with `go` and starts it. */
  static start(go: string): GoOracle {
    const dir = mkdtempSync(join(tmpdir(), 'authgate-oracle-'))
    const binary = join(dir, 'oracle')
    const built = spawnSync(go, ['build', '-o', binary, '.'], {
      cwd: SOURCE,
      encoding: 'utf8',
      env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
    })
    if (built.status !== 0 || !existsSync(binary)) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`go build of the oracle failed: ${built.stderr || built.error?.message}`)
    }
    return new GoOracle(binary, dir)
  }

  /**
   * What Go reads from `request`, decoding the body into the struct named `struct`
   * (test/oracle/go/structs.go; `POST /token` by the grant type Go reads from the query).
   */
  read(struct: string, request: RawRequest): Promise<GoReading> {
    const line = JSON.stringify({
      struct,
      method: request.method,
      target: request.target,
      headers: request.headers,
      body: request.body.toString('base64'),
    })
    return new Promise((resolve) => {
      this.#waiting.push((answer) => resolve(JSON.parse(answer) as GoReading))
      this.#child.stdin.write(line + '\n')
    })
  }

  async close(): Promise<void> {
    this.#child.stdin.end()
    if (this.#child.exitCode === null) await new Promise((resolve) => this.#child.once('exit', resolve))
    rmSync(this.#dir, { recursive: true, force: true })
  }
}
