/**
 * The example application, loaded as the tests need it: from src/. The examples import `authgate`
 * as an application does; in this repository that self-reference resolves to src/ under the
 * `authgate-source` condition (the npm test scripts pass it) and to the compiled dist/ otherwise,
 * which may be missing or older than src/. A run without the condition stops here, saying so.
 */
export async function loadTodoApp(): Promise<typeof import('../../examples/todo-app.ts')> {
  const resolved = import.meta.resolve('authgate')
  if (!resolved.endsWith('/src/index.ts'))
    throw new Error(
      `the examples import 'authgate', which resolves to ${resolved} in this process: run the test with ` +
        '`node --conditions=authgate-source --test <file>` (npm test passes it) so that it tests src/',
    )
  return import('../../examples/todo-app.ts')
}
