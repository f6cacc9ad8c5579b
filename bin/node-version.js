// Plain JavaScript on purpose: it must run on the old Node.js versions it turns away.

/** The oldest Node.js every dependency supports (undici 8 needs 22.19). Keep in step with `engines`. */
export const MINIMUM = [22, 19]

export function supported(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number)
  return major > MINIMUM[0] || (major === MINIMUM[0] && minor >= MINIMUM[1])
}
