import { AUTH_TAG_DESCRIPTIONS } from '../auth/tags.ts'
import { DEFAULT_TAG_RULES, TAG_RULE_DESCRIPTIONS } from '../openapi/conventions.ts'
import { buildDocument } from '../openapi/document.ts'
import type { DocumentOptions, OpenApiDocument, RouteEntry } from '../openapi/types.ts'

/** Descriptions of the tags the mounted routes carry and of the convention tags. */
export const DEFAULT_TAG_DESCRIPTIONS: Record<string, string> = { ...AUTH_TAG_DESCRIPTIONS, ...TAG_RULE_DESCRIPTIONS }

/**
 * The options authgate builds its documents with: the given ones, over the descriptions of the
 * auth route table's tags and the tag conventions (`Public`, `Admin`, `Management`).
 */
export function withDocumentDefaults(options: DocumentOptions = {}): DocumentOptions {
  return {
    ...options,
    tagDescriptions: { ...DEFAULT_TAG_DESCRIPTIONS, ...options.tagDescriptions },
    tagRules: options.tagRules ?? DEFAULT_TAG_RULES,
  }
}

/** The document `registerDocs` serves, for a set of routes (the generic builder with authgate's defaults). */
export function buildOpenApiDocument(entries: RouteEntry[], options: DocumentOptions = {}): OpenApiDocument {
  return buildDocument(entries, withDocumentDefaults(options))
}
