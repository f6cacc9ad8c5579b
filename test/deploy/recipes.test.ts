import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { test } from 'node:test'
import { readSettings } from '../../src/config/collect.ts'
import { unknownVariables } from '../../src/config/schema.ts'
import { loadServiceSettings } from '../../src/settings.ts'

/**
 * The deployment recipes (deploy/) against the service they deploy: every authgate setting they
 * name exists and loads, the probes ask the paths it serves, and the grace periods outlast its
 * shutdown. The files are read as text (they are ours and kept simple): no YAML parser needed.
 */
const DEPLOY = new URL('../../deploy/', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, DEPLOY), 'utf8')
const compose = read('compose.yaml')
const k8s = Object.fromEntries(
  readdirSync(new URL('kubernetes/', DEPLOY))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => [f, read(`kubernetes/${f}`)]),
)

/** `  KEY: value` pairs of the block that follows the line `header` (at deeper indentation). */
function block(text: string, header: RegExp): Record<string, string> {
  const lines = text.split('\n')
  const start = lines.findIndex((l) => header.test(l))
  assert.ok(start >= 0, `${header} is in the file`)
  const indent = lines[start]!.search(/\S/)
  const out: Record<string, string> = {}
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue
    if (line.search(/\S/) <= indent) break
    const m = /^\s+([A-Z][A-Z0-9_]*):\s*(.*)$/.exec(line)
    if (m) out[m[1]!] = m[2]!.replace(/^'(.*)'$/, '$1')
  }
  return out
}

/** Compose's `${VAR:-default}` and `${VAR:?message}`: the default, or a stand-in secret. */
const interpolate = (value: string) =>
  value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1').replace(/\$\{[A-Z_]+:\?[^}]*\}/g, 's'.repeat(40))

const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1])

test('the compose recipe: settings that exist and load, the balancer trusted, a grace period past the drain', () => {
  const env = Object.fromEntries(Object.entries(block(compose, /^ {2}authgate:$/)).map(([k, v]) => [k, interpolate(v)]))
  assert.deepEqual(unknownVariables(env), [])
  const settings = readSettings(env, loadServiceSettings)
  assert.ok(settings.rateLimit.redis, 'the replicas share one Redis')
  // Only the load balancer's address is trusted for X-Forwarded-For, and the balancer sets it.
  const lbAddress = /ipv4_address: (\S+)/.exec(compose)?.[1]
  assert.deepEqual(settings.core.trustedProxies, [lbAddress])
  assert.equal(/deploy:\n\s+replicas: (\d+)/.exec(compose)?.[1], '3')
  const haproxy = read('haproxy.cfg')
  assert.match(haproxy, /http-request set-header X-Forwarded-For %\[src\]/)
  assert.match(haproxy, new RegExp(`option httpchk GET ${settings.core.readinessPath}\\n`))
  assert.match(haproxy, /server-template authgate 3 authgate:8080/)
  const grace = seconds(/stop_grace_period: (\S+)/.exec(compose)![1]!)
  assert.ok(grace * 1000 > settings.core.shutdownDelayMs + settings.core.shutdownTimeoutMs, `${grace} s`)
  // Supabase Auth limits by the header authgate sends, mirrors its budgets, and issues `authenticated` tokens.
  const auth = block(compose, /^ {2}auth:$/)
  assert.equal(auth.GOTRUE_RATE_LIMIT_HEADER!.toLowerCase(), settings.core.clientIpHeader)
  assert.equal(auth.GOTRUE_JWT_DEFAULT_GROUP_NAME, 'authenticated')
  assert.equal(interpolate(auth.API_EXTERNAL_URL!), settings.publicUrl)
  assert.equal(interpolate(auth.GOTRUE_JWT_ISSUER!), settings.publicUrl)
})

test('the Kubernetes recipe: ConfigMap and Secret load, probes on the served paths, grace past the drain', () => {
  const env = { ...block(k8s['configmap.yaml']!, /^data:$/), ...block(k8s['secret.yaml']!, /^stringData:$/) }
  assert.deepEqual(unknownVariables(env), [])
  // The Secret as shipped has empty values (unset); filled in, the Redis URL is used.
  const settings = readSettings({ ...env, AUTHGATE_REDIS_URL: 'redis://redis:6379' }, loadServiceSettings)
  assert.equal(settings.workers, 1)
  const deployment = k8s['deployment.yaml']!
  for (const probe of ['startupProbe', 'readinessProbe']) {
    assert.match(deployment, new RegExp(`${probe}:\\n\\s+httpGet:\\n\\s+path: ${settings.core.readinessPath}\\n`))
  }
  assert.match(deployment, new RegExp(`livenessProbe:\\n\\s+httpGet:\\n\\s+path: ${settings.core.livenessPath}\\n`))
  assert.match(deployment, new RegExp(`containerPort: ${settings.core.port}\\n`))
  assert.match(deployment, new RegExp(`name: metrics\\n\\s+containerPort: ${settings.core.metricsPort}\\n`))
  const grace = Number(/terminationGracePeriodSeconds: (\d+)/.exec(deployment)?.[1])
  assert.ok(grace * 1000 > settings.core.shutdownDelayMs + settings.core.shutdownTimeoutMs, `${grace} s`)
  assert.ok(settings.core.shutdownDelayMs >= 5_000, 'a shutdown delay covers the endpoints update')
  assert.match(k8s['pdb.yaml']!, /maxUnavailable: 1/)
  assert.match(k8s['hpa.yaml']!, /minReplicas: 3/)
  // The Service exposes the public port only.
  const ports = k8s['service.yaml']!.slice(k8s['service.yaml']!.indexOf('ports:'))
  assert.doesNotMatch(ports, /9100|metrics/)
  for (const file of Object.keys(k8s).filter((f) => f !== 'kustomization.yaml'))
    assert.ok(k8s['kustomization.yaml']!.includes(`  - ${file}\n`), `${file} is in the kustomization`)
})
