// npm's `prepare`: compiles src/ to dist/, which the package's `exports` and `main` name. npm runs
// it on `npm install github:<org>/authgate` (in its clone, with the development dependencies, before
// packing it), on `npm pack` and `npm publish`, and on `npm ci` / `npm install` in a clone. The last
// two are a developer's, who may have built already: when dist/ is newer than every source it
// compiles from, the compile (about 14 s) is skipped. A pack or publish always starts from an empty
// dist/, so that a module moved or removed in src/ leaves no stale file in the package. A production
// install from a clone (`npm ci --omit=dev`) has no compiler: nothing is built, and the service runs
// its sources (bin/authgate.js); only a pack or publish without it fails.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { engineWarningNote } from './engine-warnings.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const built = join(root, 'dist', 'index.js')

/** The newest modification time among the build's inputs: src/ and the build's configuration. */
function newestInput(): number {
  let newest = 0
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) visit(path)
      else newest = Math.max(newest, statSync(path).mtimeMs)
    }
  }
  visit(join(root, 'src'))
  for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json'])
    newest = Math.max(newest, statSync(join(root, file)).mtimeMs)
  return newest
}

/** The compiler of the development dependencies, undefined when they are not installed. */
function compiler(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('typescript/bin/tsc')
  } catch {
    return undefined
  }
}

// npm names the command that runs the script: `ci` and `install` in a clone may reuse dist/.
const packing = process.env.npm_command === 'pack' || process.env.npm_command === 'publish'
const tsc = compiler()
if (tsc === undefined && !packing) {
  // `npm ci --omit=dev` in a clone: a production install has no compiler, and needs none. The
  // service runs its TypeScript sources on Node.js's own type stripping (bin/authgate.js), which
  // every Node.js the package accepts has (>= 22.18).
  process.stderr.write(
    existsSync(built)
      ? 'authgate: typescript (a development dependency) is not installed: dist/ is left as it is; npm start runs it while it is newer than src/, else the sources\n'
      : 'authgate: typescript (a development dependency) is not installed, so dist/ is not built: npm start runs the TypeScript sources on this Node.js (about 30 MB more memory than the compiled service); to compile, install with the development dependencies (npm ci) and run npm run build\n',
  )
} else if (tsc === undefined) {
  process.stderr.write(
    'authgate: npm pack and npm publish compile src/ to dist/ and need typescript: run npm ci first\n',
  )
  process.exit(1)
} else if (!packing && existsSync(built) && statSync(built).mtimeMs >= newestInput()) {
  process.stderr.write('authgate: dist/ is up to date with src/\n')
} else {
  // The compiler of the development dependencies, run by this Node.js (not a shell's `tsc`).
  if (packing) rmSync(join(root, 'dist'), { recursive: true, force: true })
  // Everything to stderr: `npm pack --json` prints its answer on stdout, which the compiler's
  // messages (tsc writes errors to stdout) would make unreadable.
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2], cwd: root })
  process.stderr.write('authgate: compiled src/ to dist/\n')
}

const note = engineWarningNote(process.env.npm_config_user_agent, process.versions.node)
if (note !== undefined && !packing) process.stderr.write(note)
