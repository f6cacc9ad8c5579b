import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { chromium, type Browser } from 'playwright-core'

/** Debian's Chromium; AUTHGATE_CHROMIUM points elsewhere. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.AUTHGATE_CHROMIUM ?? '/usr/bin/chromium'
}

/** Why no browser test can run here, or undefined when Chromium is installed. */
export async function chromiumUnavailableReason(): Promise<string | undefined> {
  const path = chromiumPath()
  try {
    await access(path, constants.X_OK)
    return undefined
  } catch {
    return `Chromium is not installed at ${path} (apt-get install chromium, or set AUTHGATE_CHROMIUM)`
  }
}

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // authgate listens on 127.0.0.1 only; `localhost` must not be tried over IPv6 first.
  '--host-resolver-rules=MAP localhost 127.0.0.1',
]

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ARGS, headless: true, timeout: 30_000 })
}
