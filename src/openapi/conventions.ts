import type { TagRules } from './types.ts'

/**
 * The tag conventions authgate's documents follow by default: operations tagged `Public` need no
 * credentials (no bearer requirement, no 401), those tagged `Admin` or `Management` can refuse a
 * valid token (403). Passed to the builder as options, so an application can change or drop them.
 */
export const DEFAULT_TAG_RULES: Required<TagRules> = {
  public: ['Public'],
  restricted: ['Admin', 'Management'],
}

/** Descriptions of the convention tags, shown when a route uses them. */
export const TAG_RULE_DESCRIPTIONS: Record<string, string> = {
  Public: 'Operations that need no credentials.',
  Admin: 'Administrative operations: a valid token is not enough, the caller needs the right role.',
  Management: 'Management operations: a valid token is not enough, the caller needs the right role.',
}
