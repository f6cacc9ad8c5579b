import { schemeHint, withoutCredentials } from '../core/url-message.ts'

/**
 * AUTHGATE_REDIS_URL names one of three deployments (docs/rate-limiting.md):
 * - one server: `redis://[user:password@]host:6379[/db]`, `rediss://` for TLS;
 * - a primary watched by Sentinel: `redis+sentinel://[user:password@]s1:26379,s2:26379,s3:26379/<master name>[/db]`
 *   (`rediss+sentinel://` for TLS to the sentinels and to Redis); the password is Redis's, the
 *   sentinels' own is AUTHGATE_REDIS_SENTINEL_PASSWORD;
 * - a Redis Cluster: `redis+cluster://[user:password@]n1:6379,n2:6379,n3:6379` (`rediss+cluster://` for TLS);
 *   a few nodes are enough, the rest are discovered.
 * Errors never repeat a password: a URL they quote has its user information masked.
 */

export interface HostPort {
  host: string
  port: number
}

export type RedisTarget =
  | { kind: 'single'; url: string; tls: boolean }
  | {
      kind: 'sentinel'
      sentinels: HostPort[]
      name: string
      db: number
      tls: boolean
      username?: string
      password?: string
    }
  | { kind: 'cluster'; nodes: HostPort[]; tls: boolean; username?: string; password?: string }

const MULTI = /^(rediss?)\+(sentinel|cluster):\/\/(?:([^@/]*)@)?([^/?#]+)(\/[^?#]*)?$/i

export function parseRedisUrl(raw: string): RedisTarget {
  const url = raw.trim()
  const multi = MULTI.exec(url)
  if (!multi) {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new Error(
        'not a valid URL (expected redis://host:6379, rediss://..., redis+sentinel://... or redis+cluster://...)',
      )
    }
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
      throw new Error(
        `must be redis://, rediss://, redis+sentinel:// or redis+cluster:// (with rediss+ for TLS), got ${JSON.stringify(withoutCredentials(url))}${schemeHint(url, 'redis')}`,
      )
    return { kind: 'single', url, tls: parsed.protocol === 'rediss:' }
  }
  const [, scheme, kind, userinfo, hostList, path] = multi
  const tls = scheme!.toLowerCase() === 'rediss'
  const credentials = parseUserinfo(userinfo)
  const defaultPort = kind!.toLowerCase() === 'sentinel' ? 26379 : 6379
  const hosts = hostList!.split(',').map((item) => parseHostPort(item.trim(), defaultPort))
  const segments = (path ?? '').split('/').filter(Boolean).map(decodeURIComponent)
  if (kind!.toLowerCase() === 'cluster') {
    if (segments.length > 0) throw new Error('a Redis Cluster URL takes no path (a cluster has one database)')
    return { kind: 'cluster', nodes: hosts, tls, ...credentials }
  }
  const [name, db, extra] = segments
  if (name === undefined)
    throw new Error('a Sentinel URL needs the master name as its path: redis+sentinel://s1:26379,s2:26379/mymaster')
  if (extra !== undefined || (db !== undefined && !/^\d+$/.test(db)))
    throw new Error('a Sentinel URL path is /<master name> or /<master name>/<db number>')
  return { kind: 'sentinel', sentinels: hosts, name, db: db === undefined ? 0 : Number(db), tls, ...credentials }
}

function parseUserinfo(userinfo: string | undefined): { username?: string; password?: string } {
  if (userinfo === undefined || userinfo === '') return {}
  const colon = userinfo.indexOf(':')
  const username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon))
  const password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1))
  // `:password@` (no user name) is the classic AUTH with a password only.
  return { ...(username !== '' ? { username } : {}), ...(password !== undefined ? { password } : {}) }
}

function parseHostPort(item: string, defaultPort: number): HostPort {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(item)
  if (!m) throw new Error(`not a host or host:port in the node list: ${JSON.stringify(item)}`)
  const port = m[3] === undefined ? defaultPort : Number(m[3])
  if (port < 1 || port > 65535) throw new Error(`port out of range in the node list: ${JSON.stringify(item)}`)
  return { host: m[1] ?? m[2]!, port }
}
