import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type Bindings = Record<string, unknown>
type ChildOptions = Record<string, unknown> & { level?: string }
type Line = (...args: unknown[]) => void
/** How the real child is made: the parent's own `child`, unless that is the one installed below. */
type ChildMaker = (parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) => FastifyBaseLogger
const pinoChildOf: ChildMaker = (parent, bindings, options) => parent.child(bindings, options)

/**
 * A request's logger, made on its first line. Fastify gives every request a child of the service's
 * logger bound to its request id, and pino's `child()` copies the logger and serializes the
 * bindings: about 330 bytes and a few microseconds per request, the largest single cost Fastify
 * adds to a forwarded request beside routing. Most requests write nothing at the service's level
 * (one line at `info` when the request log is on, none at `warn`), so the child is made only when a
 * line is written or its bindings are asked for; it is then the same pino child as before.
 */
export class LazyChildLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  readonly #options: ChildOptions
  readonly #make: ChildMaker
  /** The parent's level as last changed, where the parent says when it changes; the parent itself otherwise. */
  readonly #parentLevel: { readonly level: string }
  #child: FastifyBaseLogger | undefined

  constructor(
    parent: FastifyBaseLogger,
    bindings: Bindings,
    options: ChildOptions,
    make: ChildMaker = pinoChildOf,
    parentLevel: { readonly level: string } = parent,
  ) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
    this.#make = make
    this.#parentLevel = parentLevel
  }

  #real(): FastifyBaseLogger {
    return (this.#child ??= this.#make(this.#parent, this.#bindings, this.#options))
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parentLevel.level
  }

  set level(level: string) {
    this.#real().level = level
  }

  // Methods on the prototype, not arrow functions in fields: nothing allocated per request beyond the object.
  fatal(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['fatal']!(...args)
  }
  error(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['error']!(...args)
  }
  warn(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['warn']!(...args)
  }
  info(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['info']!(...args)
  }
  debug(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['debug']!(...args)
  }
  trace(...args: unknown[]): void {
    ;(this.#real() as unknown as Record<string, Line>)['trace']!(...args)
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }

  isLevelEnabled(level: string): boolean {
    const real = this.#real() as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }
    return real.isLevelEnabled?.(level) ?? true
  }

  bindings(): Bindings {
    const real = this.#real() as FastifyBaseLogger & { bindings?: () => Bindings }
    return real.bindings?.() ?? { ...this.#bindings }
  }
}

/** Fastify's `childLoggerFactory`: a request's logger made on first use. */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyChildLogger(logger, bindings, options as ChildOptions) as unknown as FastifyBaseLogger

/**
 * Makes the children of the service's logger that carry a request id (`bindings[label]`) lazy, in
 * place of a `childLoggerFactory`: Fastify checks every child a custom factory makes for the seven
 * methods of a logger (two lists, a closure and fourteen property reads a request, about 2.5 k
 * instructions; docs/decisions.md, D195), and skips the check only for its own factory, which asks
 * the service's logger for `child(bindings, options)`. So that logger's `child` answers a request's
 * child with a `LazyChildLogger`, made into the same pino child on its first line; any other child
 * of it, and every child of a pino child, is pino's as before.
 */
export function lazyRequestChildren(root: FastifyBaseLogger, label: string): void {
  const pinoChild = root.child as (
    this: FastifyBaseLogger,
    bindings: Bindings,
    options?: ChildOptions,
  ) => FastifyBaseLogger
  const make: ChildMaker = (parent, bindings, options) => pinoChild.call(parent, bindings, options)
  // The service's level as last set: each request's line asks its logger's level (src/observability/
  // request-log.ts), and pino's getter reads its label table through a second getter (about 0.6 k
  // instructions a request; D247). pino says when its level changes (`level-change`, from `setLevel`,
  // the only way it changes, also when a child's changes: the root's is read again then); a logger
  // with no `on` is read each time.
  const levels = root as FastifyBaseLogger & { on?: (event: 'level-change', listener: () => void) => unknown }
  let rootLevel: { level: string } = root
  if (typeof levels.on === 'function') {
    const kept = { level: root.level }
    levels.on('level-change', () => (kept.level = root.level))
    rootLevel = kept
  }
  Object.defineProperty(root, 'child', {
    configurable: true,
    writable: true,
    // pino's children inherit from their parent: on them this is pino's `child`.
    value: function child(this: FastifyBaseLogger, bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
      if (this !== root || bindings === null || typeof bindings !== 'object' || bindings[label] === undefined)
        return pinoChild.call(this, bindings, options)
      return new LazyChildLogger(root, bindings, options ?? {}, make, rootLevel) as unknown as FastifyBaseLogger
    },
  })
}
