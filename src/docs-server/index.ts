// Serving the document and the reference page.
export { registerDocs, type RegisterDocsOptions, type DocsRoutes } from './register-docs.ts'
export { loadOpenApiConfig, resolveOpenApiConfig, type OpenApiOptions, type ResolvedOpenApiConfig } from './config.ts'
