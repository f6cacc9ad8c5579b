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

test('run as root from a clone out of reach, the default data goes to one directory per clone that only root may write to', async (t) => {
  const { mkdtemp, mkdir, chmod, chown, rm, symlink, stat } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { reachableDataDir, rootOwnedDirectory, REACHABLE_BASE } =
    await import('../../scripts/dev/embedded-postgres.ts')
  assert.equal(REACHABLE_BASE, '/var/tmp')
  const a = reachableDataDir('/root/x/.cache/dev-postgres')
  assert.match(a, /^\/var\/tmp\/authgate-dev-postgres-[0-9a-f]{12}$/)
  assert.equal(reachableDataDir('/root/x/.cache/dev-postgres/'), a, 'the same clone, the same directory')
  assert.notEqual(reachableDataDir('/root/y/.cache/dev-postgres'), a, 'another clone, another directory')

  const base = await mkdtemp(join(tmpdir(), 'authgate-reachable-'))
  t.after(() => rm(base, { recursive: true, force: true }))
  const made = join(base, 'made')
  await rootOwnedDirectory(made)
  assert.equal((await stat(made)).mode & 0o777, 0o755)
  // A world-writable base lets anyone take the name first: a link, or a directory others may write to, is refused.
  await symlink(made, join(base, 'link'))
  await assert.rejects(rootOwnedDirectory(join(base, 'link')), /is not a directory of root's/)
  await mkdir(join(base, 'open'))
  await chmod(join(base, 'open'), 0o777)
  await assert.rejects(rootOwnedDirectory(join(base, 'open')), /is not a directory of root's/)
  if (process.getuid?.() === 0) {
    await mkdir(join(base, 'theirs'))
    await chown(join(base, 'theirs'), 4242, 4242)
    await assert.rejects(rootOwnedDirectory(join(base, 'theirs')), /only root may write to: remove it, or set PGHOST/)
  }
})
