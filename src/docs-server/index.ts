// Serving the document and the reference page.
export { buildOpenApiDocument, DEFAULT_TAG_DESCRIPTIONS, withDocumentDefaults } from './document.ts'
export { registerDocs, type RegisterDocsOptions, type DocsRoutes } from './register-docs.ts'
export { loadOpenApiConfig, resolveOpenApiConfig, type OpenApiOptions, type ResolvedOpenApiConfig } from './config.ts'
