import assert from 'node:assert/strict'
import { test } from 'node:test'
import { serverAccount } from '../../scripts/dev/embedded-postgres.ts'

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'postgres:x:101:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash',
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
].join('\n')

// One test for both cases, so that neither is reported skipped on the machine running it.
test('the embedded PostgreSQL runs as the user, or as root as postgres, else nobody, else not at all', async () => {
  if (process.getuid?.() !== 0) {
    assert.equal(await serverAccount(PASSWD), undefined)
    return
  }
  assert.deepEqual(await serverAccount(PASSWD), { name: 'postgres', uid: 101, gid: 104 })
  const withoutPostgres = PASSWD.split('\n')
    .filter((line) => !line.startsWith('postgres:'))
    .join('\n')
  assert.deepEqual(await serverAccount(withoutPostgres), { name: 'nobody', uid: 65534, gid: 65534 })
  await assert.rejects(serverAccount('root:x:0:0:root:/root:/bin/bash\n'), /refuses to run as root/)
})

test("run as root from a 0700 directory, the embedded PostgreSQL's account is told which directory stops it", async (t) => {
  const { mkdtemp, mkdir, chmod, chown, rm } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { blockedDirectories, blockedAdvice } = await import('../../scripts/dev/embedded-postgres.ts')
  const base = await mkdtemp(join(tmpdir(), 'authgate-blocked-'))
  t.after(() => rm(base, { recursive: true, force: true }))
  // A home like /root (0700, owned by someone else) holding the clone, and an open one beside it.
  const account = { name: 'postgres', uid: 4242, gid: 4242 }
  const home = join(base, 'home')
  await mkdir(join(home, 'authgate', '.cache'), { recursive: true })
  await mkdir(join(base, 'open', 'authgate'), { recursive: true })
  await chmod(base, 0o755)
  await chmod(home, 0o700)
  assert.deepEqual(await blockedDirectories(account, [join(home, 'authgate', '.cache', 'dev-postgres')]), [home])
  assert.deepEqual(await blockedDirectories(account, [join(base, 'open', 'authgate', 'data')]), [])
  // The account's own directory is entered by its owner bits, its group's by the group bits.
  if (process.getuid?.() === 0) {
    await chown(home, account.uid, 0)
    assert.deepEqual(await blockedDirectories(account, [join(home, 'authgate')]), [])
    await chown(home, 0, account.gid)
    await chmod(home, 0o750)
    assert.deepEqual(await blockedDirectories(account, [join(home, 'authgate')]), [])
    await chmod(home, 0o700)
  }
  const advice = blockedAdvice(account, [home])
  assert.match(advice, /runs the embedded one as the account postgres/)
  assert.ok(advice.includes(`chmod o+x ${home}`), advice)
  assert.match(advice, /PGHOST/)
})
