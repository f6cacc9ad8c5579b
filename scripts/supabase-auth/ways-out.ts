// Every way to a running Supabase Auth when the build cannot happen here, said the same way by
// `npm run backend:build` and `npm run dev` wherever they stop: no Go, an old Go, no network for the
// archive or for Go's modules.
import { BINARY_ENV, SUPABASE_AUTH_COMMIT, SUPABASE_AUTH_GO_VERSION } from './binary.ts'

export const SOURCE_ENV = 'AUTHGATE_SUPABASE_AUTH_SRC'
/** GitHub's archive of the pinned commit: what a user with the internet downloads. */
export const UPSTREAM_ARCHIVE = `https://github.com/supabase/auth/archive/${SUPABASE_AUTH_COMMIT}.tar.gz`

export interface WaysOutOptions {
  /** Go is missing or too old: installing it is the first way out. */
  needGo?: boolean
  /** The archive could not be fetched: a copy of it is a way out. */
  needArchive?: boolean
}

/** The ways out, one per line, each with the exact variable or command. */
export function waysOut(options: WaysOutOptions = {}): string {
  const lines = ['Ways out:']
  if (options.needGo)
    lines.push(
      `  - install Go >= ${SUPABASE_AUTH_GO_VERSION} (https://go.dev/dl/; on PATH or in /usr/local/go/bin) and run it again;`,
    )
  if (options.needArchive ?? true)
    lines.push(
      `  - ${SOURCE_ENV}=/path/to/auth.tar.gz: a copy of ${UPSTREAM_ARCHIVE}`,
      '    fetched elsewhere (or the URL of a mirror of it); it is checked against the same pinned digest;',
    )
  lines.push(
    `  - ${BINARY_ENV}=/path/to/supabase-auth: a server built elsewhere (npm run backend:build there; ~/.cache/authgate/);`,
    '  - AUTHGATE_BACKEND_URL=http://localhost:9999 npm run dev: a Supabase Auth you already run (then only',
    "    authgate is started): a supabase/auth container at :9999, or the Supabase CLI's `supabase start`,",
    '    whose Auth is AUTHGATE_BACKEND_URL=http://127.0.0.1:54321/auth/v1 with AUTHGATE_BACKEND_APIKEY=<its publishable key>.',
  )
  return lines.join('\n')
}
