import type { FastifyInstance } from 'fastify'
import { AuthgateConfigError } from '../core/config-error.ts'

export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource'

export interface ResourceMetadataOptions {
  /**
   * The application's API identifier (RFC 9728 `resource`), e.g. `https://api.example.com`. Default:
   * the origin of the issuer, since authgate serves the auth routes and the API from one origin.
   */
  resource?: string
  /** Default: the issuer (authgate's public URL plus prefix, where Supabase Auth's OAuth server answers). */
  authorizationServers?: string[]
  resourceName?: string
  scopesSupported?: string[]
  /** A page about the API, e.g. the reference page's absolute URL. */
  resourceDocumentation?: string
}

export interface ResourceMetadata {
  resource: string
  authorization_servers: string[]
  bearer_methods_supported: string[]
  resource_name?: string
  scopes_supported?: string[]
  resource_documentation?: string
}

export interface ResolvedResourceMetadata {
  document: ResourceMetadata
  /** Absolute URL of the metadata, for `resource_metadata` in `WWW-Authenticate`. */
  url: string
  /** The local path it is served at. */
  path: string
}

/**
 * RFC 9728 §3.1: the metadata of `https://host/some/path` lives at
 * `https://host/.well-known/oauth-protected-resource/some/path`; of `https://host`, at
 * `https://host/.well-known/oauth-protected-resource`.
 */
export function resolveResourceMetadata(
  issuer: string,
  options: ResourceMetadataOptions = {},
): ResolvedResourceMetadata {
  const resource = (options.resource ?? new URL(issuer).origin).replace(/\/+$/, '')
  const url = new URL(resource)
  if (url.search || url.hash)
    throw new AuthgateConfigError('protect.resourceMetadata.resource', 'must have no query or fragment')
  const path = PROTECTED_RESOURCE_WELL_KNOWN + (url.pathname === '/' ? '' : url.pathname)
  const document: ResourceMetadata = {
    resource,
    authorization_servers: options.authorizationServers ?? [issuer],
    bearer_methods_supported: ['header'],
  }
  if (options.resourceName) document.resource_name = options.resourceName
  if (options.scopesSupported) document.scopes_supported = options.scopesSupported
  if (options.resourceDocumentation) document.resource_documentation = options.resourceDocumentation
  return { document, url: url.origin + path, path }
}

const StringList = { type: 'array', items: { type: 'string' } } as const
const MetadataSchema = {
  type: 'object',
  properties: {
    resource: { type: 'string', format: 'uri', description: 'The API this metadata describes' },
    authorization_servers: { ...StringList, description: 'Issuers that grant tokens for this API' },
    bearer_methods_supported: { ...StringList, description: 'How the token is sent: in the Authorization header' },
    resource_name: { type: 'string' },
    scopes_supported: StringList,
    resource_documentation: { type: 'string', format: 'uri' },
  },
  required: ['resource', 'authorization_servers', 'bearer_methods_supported'],
} as const

export function registerResourceMetadataRoute(app: FastifyInstance, resolved: ResolvedResourceMetadata): void {
  const body = JSON.stringify(resolved.document)
  app.get(
    resolved.path,
    {
      schema: {
        tags: ['OAuth'],
        summary: 'Protected resource metadata (RFC 9728)',
        description:
          "How to get a token for this API: the authorization servers whose access tokens it accepts. OAuth and MCP clients read it after a 401's `WWW-Authenticate: Bearer resource_metadata=...`.",
        security: [],
        response: { 200: MetadataSchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=600')
      reply.type('application/json; charset=utf-8')
      return reply.send(body)
    },
  )
}
