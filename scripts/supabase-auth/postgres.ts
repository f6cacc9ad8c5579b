import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/** Where the superuser connection goes; libpq's own variables win so CI can point elsewhere. */
export interface PostgresTarget {
  host: string
  port: number
  superuser: string
}

export function postgresTarget(env: NodeJS.ProcessEnv = process.env): PostgresTarget {
  return {
    host: env.PGHOST ?? '127.0.0.1',
    port: Number(env.PGPORT ?? 5432),
    superuser: env.PGUSER ?? 'postgres',
  }
}

/** The login role and password of supabase/auth's hack/init_postgres.sql. */
export const AUTH_ADMIN_ROLE = 'supabase_auth_admin'
export const AUTH_ADMIN_PASSWORD = 'root'
export const AUTH_SCHEMA = 'auth'

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/** Database names end up inside SQL text, so only plain identifiers are accepted. */
export function assertDatabaseName(name: string): void {
  if (!IDENTIFIER.test(name)) {
    throw new Error(`invalid database name ${JSON.stringify(name)}: use lower-case letters, digits and _`)
  }
}

export async function runPsql(target: PostgresTarget, database: string, sql: string): Promise<string> {
  const args = ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', target.host, '-p', String(target.port)]
  args.push('-U', target.superuser, '-d', database, '-c', sql)
  const { stdout } = await execFileAsync('psql', args, { timeout: 30_000 })
  return stdout.trim()
}

/** Why PostgreSQL cannot be used, or undefined when a superuser query works. */
export async function postgresUnavailableReason(target = postgresTarget()): Promise<string | undefined> {
  try {
    await execFileAsync('psql', ['--version'], { timeout: 10_000 })
  } catch {
    return 'psql (PostgreSQL client) is not installed: apt-get install postgresql (server and client)'
  }
  try {
    await runPsql(target, 'postgres', 'SELECT 1')
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n').slice(-2).join(' ').trim() : String(error)
    return (
      `PostgreSQL at ${target.host}:${target.port} (user ${target.superuser}) is not reachable: ${detail}; ` +
      'start one (Debian: apt-get install postgresql) and point PGHOST, PGPORT, PGUSER, PGPASSWORD at a superuser'
    )
  }
  return undefined
}

/** The roles Supabase Auth expects in the cluster; safe to run again. */
export const CLUSTER_ROLES_SQL = `
DO $$
BEGIN
  -- Files preparing their databases at the same time would race to create the same role.
  PERFORM pg_advisory_xact_lock(hashtext('authgate cluster roles'));
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'postgres') THEN
    CREATE ROLE postgres;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'supabase_admin') THEN
    CREATE ROLE supabase_admin LOGIN CREATEROLE CREATEDB REPLICATION BYPASSRLS;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${AUTH_ADMIN_ROLE}') THEN
    CREATE ROLE ${AUTH_ADMIN_ROLE} NOINHERIT CREATEROLE LOGIN NOREPLICATION PASSWORD '${AUTH_ADMIN_PASSWORD}';
  END IF;
END
$$;`

/**
 * Does what supabase/auth's hack/init_postgres.sql does, but in a dedicated database and
 * idempotently. Roles are cluster-wide, so they are created once and never dropped; the
 * search_path is set per database so other databases of the cluster are left alone.
 * With `fresh`, the database is dropped first (open connections included); with `template`, a
 * database made here is a copy of that one (settings per database, which a copy does not carry,
 * are set again).
 */
export async function prepareAuthDatabase(
  database: string,
  options: { fresh?: boolean; target?: PostgresTarget; template?: string } = {},
): Promise<void> {
  assertDatabaseName(database)
  if (options.template !== undefined) assertDatabaseName(options.template)
  const target = options.target ?? postgresTarget()
  const copy = options.template === undefined ? '' : ` TEMPLATE ${options.template}`
  // One session for every step: each psql start is a connection and a process, a second or more
  // on a loaded machine, and the end-to-end suite prepares a database some thirty times.
  await runPsqlScript(
    target,
    'postgres',
    [
      `${CLUSTER_ROLES_SQL}`,
      options.fresh === true ? `DROP DATABASE IF EXISTS ${database} WITH (FORCE);` : '',
      `SELECT 'CREATE DATABASE ${database}${copy}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '${database}') \\gexec`,
      `\\connect ${database}`,
      ...authDatabaseSql(database).map((statement) => `${statement};`),
    ].join('\n'),
  )
}

/** Runs a psql script (backslash commands allowed) in one session, stopping at the first error. */
export async function runPsqlScript(target: PostgresTarget, database: string, script: string): Promise<string> {
  const args = ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', target.host, '-p', String(target.port)]
  args.push('-U', target.superuser, '-d', database, '-f', '-')
  const running = execFileAsync('psql', args, { timeout: 60_000 })
  running.child.stdin?.end(script)
  const { stdout } = await running
  return stdout.trim()
}

/** What the database itself needs, run inside it once it exists; safe to run again. */
export function authDatabaseSql(database: string): string[] {
  assertDatabaseName(database)
  return [
    `CREATE SCHEMA IF NOT EXISTS ${AUTH_SCHEMA} AUTHORIZATION ${AUTH_ADMIN_ROLE}`,
    `GRANT CREATE ON DATABASE ${database} TO ${AUTH_ADMIN_ROLE}`,
    `ALTER ROLE ${AUTH_ADMIN_ROLE} IN DATABASE ${database} SET search_path = ${AUTH_SCHEMA}`,
  ]
}

export async function dropDatabase(database: string, target = postgresTarget()): Promise<void> {
  assertDatabaseName(database)
  await runPsql(target, 'postgres', `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
}

export function authDatabaseUrl(database: string, target = postgresTarget()): string {
  assertDatabaseName(database)
  const credentials = `${AUTH_ADMIN_ROLE}:${AUTH_ADMIN_PASSWORD}`
  return `postgres://${credentials}@${target.host}:${target.port}/${database}?search_path=${AUTH_SCHEMA}&sslmode=disable`
}
