// Typed route definitions: the one place that joins validation, protection and documentation.
export { defineRoute, type ExplicitResponse, type RouteDefinition } from './define-route.ts'
export { inPath, inQuery, inHeader, inForm, splitFieldTags } from './field-tags.ts'
export { withRules, type Rules } from './rules.ts'
