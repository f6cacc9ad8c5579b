import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { JEMALLOC, imageAllocatorEnv } from '../../bench/allocator.ts'

/**
 * The bench and the soak measure authgate's memory as the container image runs it: the allocator
 * settings they start it with are the Dockerfile's (docs/decisions.md, D180).
 */
const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8')

/** `ENV` settings of the image's last stage, as `NAME=value` pairs. */
function imageEnv(): Map<string, string> {
  const stages = dockerfile.split(/^FROM /m)
  const env = new Map<string, string>()
  for (const line of stages[stages.length - 1]!.split('\n')) {
    if (!line.startsWith('ENV ')) continue
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const eq = pair.indexOf('=')
      env.set(pair.slice(0, eq), pair.slice(eq + 1))
    }
  }
  return env
}

test('the image preloads jemalloc with the settings the bench and the soak start authgate with', () => {
  const image = imageEnv()
  assert.equal(image.get('LD_PRELOAD'), '/usr/local/lib/libjemalloc.so.2')
  assert.match(dockerfile, /apt-get install -y --no-install-recommends libjemalloc2/)
  assert.match(dockerfile, /ln -s .*libjemalloc\\\.so\\\.2.* \/usr\/local\/lib\/libjemalloc\.so\.2/)
  const bench = imageAllocatorEnv()
  assert.equal(bench['MALLOC_ARENA_MAX'], image.get('MALLOC_ARENA_MAX'))
  if (JEMALLOC !== undefined) {
    assert.equal(bench['MALLOC_CONF'], image.get('MALLOC_CONF'))
    assert.equal(bench['LD_PRELOAD'], JEMALLOC)
  } else {
    assert.equal(bench['LD_PRELOAD'], undefined)
  }
})

test(
  'node started with the bench’s allocator settings runs on jemalloc',
  { skip: JEMALLOC === undefined && 'libjemalloc2 not installed' },
  () => {
    const out = spawnSync(
      process.execPath,
      ['-e', "process.stdout.write(require('node:fs').readFileSync('/proc/self/maps', 'utf8'))"],
      { env: { ...process.env, ...imageAllocatorEnv() }, encoding: 'utf8' },
    )
    assert.equal(out.status, 0, out.stderr)
    assert.match(out.stdout, /libjemalloc\.so\.2/)
    assert.doesNotMatch(out.stderr, /cannot be preloaded/)
  },
)
