#!/usr/bin/env node
// The `authgate` command and `npm start`. Plain JavaScript on purpose: an older Node.js reaches the
// version check below instead of failing on TypeScript syntax or a missing API with a stack trace.
import { existsSync } from 'node:fs'
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

// From a checkout, the TypeScript sources (Node.js runs them directly); from the npm package, the
// compiled ones. The service runs in this process, so signals reach it directly.
const source = new URL('../src/main.ts', import.meta.url)
await import(existsSync(source) ? source.href : new URL('../dist/main.js', import.meta.url).href)
