/**
 * authgate reads requests as Supabase Auth's Go reads them, asked of Go itself: the oracle
 * (test/oracle/go/, built here with the Go toolchain) answers what Go's standard library reads
 * from each raw request, and every request authgate does not refuse must read the same to it
 * (test/oracle/property.ts). Generated requests (test/oracle/generate.ts), a fixed number per run
 * (AUTHGATE_ORACLE_RUNS, default 20,000), seeded from the commit (AUTHGATE_ORACLE_SEED to replay a
 * run); then the stored counterexamples of earlier runs. `npm run fuzz` runs for longer.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { encoded, restored, type StoredCase } from './generate.ts'
import { goBinary, GoOracle, type RawRequest } from './go-oracle.ts'
import { tally } from './property.ts'
import { caseDifferences, runOnce, seedOf } from './run.ts'

const go = goBinary()
const skip =
  go === undefined ? 'no Go toolchain (GO, go on the PATH, /usr/local/go/bin/go): .ci/run installs it' : false
const RUNS = Number(process.env.AUTHGATE_ORACLE_RUNS ?? 20_000)
const REGRESSIONS = JSON.parse(readFileSync(new URL('./regressions.json', import.meta.url), 'utf8')) as StoredCase[]

describe('authgate reads as Go reads', { skip }, () => {
  let oracle: GoOracle
  before(() => {
    oracle = GoOracle.start(go!)
  })
  after(() => oracle?.close())

  const json = (target: string, text: string): RawRequest => ({
    method: 'POST',
    target,
    headers: [['Content-Type', 'application/json']],
    body: encoded(text),
  })

  test('the oracle reads as Go documents: folded keys, the last of a repeated key, null, U+FFFD, the first query value', async () => {
    const r = await oracle.read(
      'POST /signup',
      json('/auth/signup?a=1&a=2&b=x;&c=%zz&d=a+b%20c', '{"EMAIL":"a","paſſword":"p","email":null,"phone":"\uE000"}'),
    )
    assert.equal(r.fields?.email, 'a')
    assert.equal(r.fields?.password, 'p')
    assert.equal(r.fields?.phone, '\uFFFD')
    assert.deepEqual(r.query, { a: '1', d: 'a b c' })
    const t = await oracle.read('POST /token', json('/auth/token?grant_type=refresh_token', '{"refresh_token":1}'))
    assert.match(t.decode_error ?? '', /cannot unmarshal number/)
    const unknown = await oracle.read('POST /token', json('/auth/token?grant_type=nope', '{}'))
    assert.equal(unknown.no_struct, true)
    const basic = await oracle.read('POST /oauth/token', {
      method: 'POST',
      target: '/auth/oauth/token',
      headers: [
        ['Content-Type', 'application/x-www-form-urlencoded'],
        ['Authorization', `Basic ${Buffer.from('a%3Ab:s+t').toString('base64')}`],
      ],
      body: Buffer.from('grant_type=x&grant_type=y&code=%zz'),
    })
    assert.deepEqual(basic.basic, { user: 'a%3Ab', pass: 's+t', unescaped_user: 'a:b', unescaped_pass: 's t' })
    assert.deepEqual(basic.form, { grant_type: 'x' })
  })

  test('the stored counterexamples of earlier runs read alike', async () => {
    for (const s of REGRESSIONS) {
      const found = await caseDifferences(oracle, restored(s))
      assert.deepEqual(found, [], `${s.why}: ${s.method} ${s.target} ${Buffer.from(s.body, 'base64').toString()}`)
    }
  })

  test(`${RUNS} generated requests read alike`, { timeout: 600_000 }, async () => {
    const seed = seedOf()
    const { requests, found } = await runOnce(oracle, seed, RUNS)
    console.log(
      `# oracle: ${requests} requests, ${found ? 1 : 0} differences (seed ${seed}; ` +
        `${tally.compared} read by authgate and compared, ${tally.refused} refused)`,
    )
    assert.equal(
      found,
      undefined,
      found &&
        `AUTHGATE_ORACLE_SEED=${seed}: ${found.case.request.method} ${found.case.request.target} ` +
          `${JSON.stringify(found.case.request.headers)} ${found.case.request.body.toString()}\n` +
          JSON.stringify(found.differences),
    )
  })
})
