#!/usr/bin/env node
// The `authgate` command and `npm start`. Plain JavaScript on purpose: an older Node.js reaches the
// version check below instead of failing on TypeScript syntax or a missing API with a stack trace.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MINIMUM, supported } from './node-version.js'

if (!supported(process.versions.node)) {
  process.stderr.write(
    `authgate: Node.js ${MINIMUM.join('.')} or newer is required; this is ${process.version} (${process.execPath}).\n` +
      'Install a current Node.js (https://nodejs.org), or run `npm ci && npm start` in the repository:\n' +
      'its npm scripts use the Node.js 24 installed as a development dependency.\n',
  )
  process.exit(1)
}

// `authgate dev`: the whole local stack (see scripts/dev.ts), from a clone of the repository only.
if (process.argv[2] === 'dev') {
  const dev = new URL('../scripts/dev.ts', import.meta.url)
  if (!existsSync(dev)) {
    process.stderr.write('authgate dev runs from a clone of the authgate repository (npm ci && npm run dev)\n')
    process.exit(1)
  }
  const { runDev } = await import(dev.href)
  process.exit(await runDev(process.argv.slice(3)))
}

// The compiled service when it is current: Node.js's TypeScript support holds about 25 MB of a process
// that runs the sources. From a checkout, dist/ is current when no file under src/ changed after it
// was built (npm run build; a clone's npm ci runs it); otherwise the sources run, so an edit is never
// masked by an old build. The npm package ships dist/ only. Either way the service runs in this
// process, so signals reach it directly.
const compiled = new URL('../dist/main.js', import.meta.url)
const source = new URL('../src/main.ts', import.meta.url)
await import(
  existsSync(source) && !builtAfter(compiled, new URL('../src/', import.meta.url)) ? source.href : compiled.href
)

/** True when `file` exists and is newer than every file under `dir`. */
function builtAfter(file, dir) {
  let built
  try {
    built = statSync(file).mtimeMs
  } catch {
    return false
  }
  const newer = (folder) =>
    readdirSync(folder, { withFileTypes: true }).some((entry) => {
      const path = join(folder, entry.name)
      return entry.isDirectory() ? newer(path) : statSync(path).mtimeMs > built
    })
  return !newer(fileURLToPath(dir))
}
