// Typed route definitions: the one place that joins validation, protection and documentation.
export {
  defineRoute,
  inPath,
  inQuery,
  inHeader,
  inForm,
  type ExplicitResponse,
  type RouteDefinition,
} from './define-route.ts'
export { withRules, type Rules } from './rules.ts'
