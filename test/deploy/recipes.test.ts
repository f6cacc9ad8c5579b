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
  const lbAddress = interpolate(/ipv4_address: (\S+)/.exec(compose)![1]!)
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

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

test("the recipes follow the README's rules: the publishable key, asymmetric tokens, a network of the user's choosing", async () => {
  // The README's rule for the hosted key, and every recipe line about AUTHGATE_BACKEND_APIKEY with it.
  assert.match(README, /Use the publishable \(anon\) key, never the service-role or secret key/)
  const secret = k8s['secret.yaml']!
  const comment = secret.slice(0, secret.indexOf('AUTHGATE_BACKEND_APIKEY:')).split('\n').slice(-3).join('\n')
  assert.match(
    comment,
    /publishable \(anon\) key \(sb_publishable_\.\.\.\), never the secret\s+#\s+or service-role key/,
  )
  for (const [name, text] of [['compose.yaml', compose], ...Object.entries(k8s)] as Array<[string, string]>) {
    for (const m of text.matchAll(/^\s*AUTHGATE_BACKEND_APIKEY: (.*)$/gm))
      assert.doesNotMatch(m[1]!, /sb_secret|service_role/, name)
  }

  // Tokens signed with an asymmetric key, as the README's checklist says, and no HS256 let back in.
  assert.match(README, /\*\*Tokens\.\*\* Supabase Auth signs with asymmetric keys \(`GOTRUE_JWT_KEYS`/)
  const auth = block(compose, /^ {2}auth:$/)
  assert.match(auth.GOTRUE_JWT_KEYS ?? '', /^\$\{JWT_KEYS:\?/)
  assert.ok(!/HS256/.test(auth.GOTRUE_JWT_VALID_METHODS ?? ''), 'HS256 is not among the valid methods')
  // deploy/.env.example's command makes a key Supabase Auth takes: a private ES256 JWK with its `alg`
  // (without it Supabase Auth signs with HS256) and a key id.
  const example = read('.env.example')
  const command = /^# {3}(node -e .*)$/m.exec(example.slice(example.indexOf("# Supabase Auth's signing key")))![1]!
  const script = /^node -e "(.*)"$/.exec(command)![1]!.replaceAll('\\"', '"')
  const { execFileSync } = await import('node:child_process')
  const line = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } })
  const keys = JSON.parse(/^JWT_KEYS='(.*)'\n$/.exec(line)![1]!) as Array<Record<string, unknown>>
  assert.equal(keys.length, 1)
  assert.equal(keys[0]!.alg, 'ES256')
  assert.equal(keys[0]!.crv, 'P-256')
  assert.equal(typeof keys[0]!.d, 'string')
  assert.equal(typeof keys[0]!.kid, 'string')
  assert.match(example, /^JWT_KEYS=$/m)

  // No fixed network: the subnet and the balancer's address come from deploy/.env, and the address
  // authgate trusts is the balancer's, from the same variable.
  for (const m of compose.matchAll(/^\s*(?:- )?(subnet|ipv4_address): (.*)$/gm))
    assert.match(m[2]!, /^\$\{[A-Z_]+:-[^}]+\}$/, `${m[1]} is configurable: ${m[2]}`)
  const lb = /ipv4_address: \$\{([A-Z_]+):-/.exec(compose)![1]!
  assert.match(block(compose, /^ {2}authgate:$/).AUTHGATE_TRUSTED_PROXIES!, new RegExp(`^\\$\\{${lb}:-`))
  const subnet = /subnet: \$\{([A-Z_]+):-/.exec(compose)![1]!
  for (const name of [lb, subnet]) assert.match(example, new RegExp(`^${name}=\\S+$`, 'm'), `${name} in .env.example`)
})
