// What npm's EBADENGINE warnings mean in a clone, said by `prepare` once npm ci is done.
// @ts-expect-error plain JavaScript on purpose (it must run on old Node.js versions), no declarations
import { MINIMUM as minimum, supported as isSupported } from '../bin/node-version.js'

const MINIMUM = minimum as number[]
const supported = isSupported as (version: string) => boolean

/**
 * `npm ci` in a clone on an older Node.js than the package needs: npm checks every package's
 * `engines` against the Node.js it runs on and prints an EBADENGINE warning for each (about 180
 * lines on Node.js 20), which reads as failure. It is not one: the development dependency `node`
 * puts Node.js 24 first on the PATH of every npm script, this one included. Said once, last.
 * undefined when npm runs on a Node.js the package supports (or did not say which).
 */
export function engineWarningNote(userAgent: string | undefined, scriptNode: string): string | undefined {
  const npmNode = /\bnode\/v(\d+\.\d+\.\d+)/.exec(userAgent ?? '')?.[1]
  if (npmNode === undefined || supported(npmNode)) return undefined
  return (
    `authgate: npm runs on Node.js ${npmNode}, older than the ${MINIMUM.join('.')} the package and most of its ` +
    `dependencies need, hence the EBADENGINE warnings above. The install is complete: npm run dev, npm test and ` +
    `npm start run on the Node.js ${scriptNode} it installed (node_modules/.bin/node). Programs you start ` +
    `yourself with node (the README's supabase-js example) need Node.js >= 22; npm ci --loglevel=error ` +
    `installs without the warnings.\n`
  )
}
