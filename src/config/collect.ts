import { AuthgateConfigError, type Env } from './env.ts'
import { unknownVariables } from './schema.ts'

/** Several configuration errors at once; `problems` holds each, the message lists them. */
export class AuthgateConfigErrors extends AuthgateConfigError {
  readonly problems: readonly AuthgateConfigError[]
  constructor(problems: readonly AuthgateConfigError[]) {
    super(problems[0]!.option, '')
    this.name = 'AuthgateConfigErrors'
    this.message = `${problems.length} problems:\n${problems.map((p) => `  ${p.message}`).join('\n')}`
    this.problems = problems
  }
}

/**
 * Runs the configuration readers so that one start-up reports every mistake, not one per attempt.
 * A reader stops at its first bad value; the variable it names is set aside (read as its default)
 * and the readers run again, until they pass or a problem names nothing that can be set aside.
 * Unknown `AUTHGATE_*` variables are one problem, set aside before the first run.
 */
export function readSettings<T>(env: Env, read: (env: Env) => T): T {
  const problems: AuthgateConfigError[] = []
  let current: Env = { ...env }
  const unknown = unknownVariables(env)
  if (unknown.length > 0) {
    for (const { name } of unknown) delete current[name]
    const list = unknown.map((u) => `${u.name} (did you mean ${u.closest}?)`).join(', ')
    problems.push(
      new AuthgateConfigError(
        unknown[0]!.name,
        unknown.length === 1
          ? `unknown variable; did you mean ${unknown[0]!.closest}? (authgate --help lists every setting)`
          : `unknown variables: ${list}; authgate --help lists every setting`,
      ),
    )
  }
  for (;;) {
    try {
      const value = read(current)
      if (problems.length === 0) return value
      break
    } catch (err) {
      if (!(err instanceof AuthgateConfigError)) throw err
      problems.push(err)
      if (!(err.option in current)) break
      current = { ...current }
      delete current[err.option]
    }
  }
  throw problems.length === 1 ? problems[0]! : new AuthgateConfigErrors(problems)
}
