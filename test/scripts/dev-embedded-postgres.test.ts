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
