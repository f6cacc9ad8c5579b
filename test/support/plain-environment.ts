/**
 * The environment of a program a test starts as a user would run it (npm, tsc, a linter, the
 * installed package): the test process's own, without what the test runner adds. Under `npm test`'s
 * coverage every Node.js process started would otherwise record what it runs for the runner to read,
 * and take the runner's options and reporters. NODE_V8_COVERAGE is set empty rather than deleted:
 * Node.js gives a child its own NODE_V8_COVERAGE unless the child's environment sets one.
 */
export function plainEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, NODE_V8_COVERAGE: '' }
  delete env.NODE_OPTIONS
  delete env.NODE_TEST_CONTEXT
  return env
}
