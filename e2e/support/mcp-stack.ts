import assert from 'node:assert/strict'
import { GoTrueClient } from '@supabase/auth-js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { authgateProtect } from '../../src/protect/index.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'
import { AUTH_ADMIN_ROLE, postgresTarget, runPsql } from '../../scripts/supabase-auth/postgres.ts'
import { startGateway, type Gateway, type StackOptions } from './stack.ts'
import { startSupabaseAuth, type SupabaseAuthServer } from './supabase-auth.ts'
import { reservePort } from '../../scripts/supabase-auth/port.ts'

/**
 * The access-token hook of docs/mcp.md: tokens issued to an OAuth client are for the MCP server
 * (`aud`) and carry the scope the hook grants; first-party session tokens are left as they are.
 */
export function mcpHookSql(resource: string): string {
  return `
    create or replace function public.mcp_access_token_hook(event jsonb) returns jsonb
    language plpgsql stable as $$
    declare
      claims jsonb := event->'claims';
    begin
      if coalesce(claims->>'client_id', '') <> '' then
        claims := jsonb_set(claims, '{aud}', to_jsonb('${resource}'::text));
        claims := jsonb_set(claims, '{scope}', to_jsonb(trim(coalesce(claims->>'scope', '') || ' todos:read')));
      end if;
      return jsonb_build_object('claims', claims);
    end;
    $$;
    grant usage on schema public to ${AUTH_ADMIN_ROLE};
    grant execute on function public.mcp_access_token_hook(jsonb) to ${AUTH_ADMIN_ROLE};
    revoke execute on function public.mcp_access_token_hook(jsonb) from public;`
}

export interface McpStack {
  backend: SupabaseAuthServer
  gateway: Gateway
  /** http://localhost:<port>: the public origin Supabase Auth and the metadata name. */
  publicOrigin: string
  /** publicOrigin + /auth: the issuer. */
  publicUrl: string
  /** publicOrigin + /mcp: the MCP server, as its metadata names it and the hook writes it into `aud`. */
  resource: string
  /** publicOrigin + /other-mcp: a second MCP server, another resource (the hook never names it). */
  otherResource: string
  /** Requests to the public origin, sent to the same authgate over 127.0.0.1 and written down in `lines`. */
  fetch: typeof fetch
  lines: string[]
  /** A supabase-js user of the project (signed up), and the token of that first-party session. */
  user: GoTrueClient
  sessionToken: string
  stop(): Promise<void>
}

/**
 * Supabase Auth with the OAuth server and the MCP access-token hook, and authgate in front of it
 * serving an MCP server at /mcp (`auth: { resource }`), /mcp/todos (the hook's scope) and an
 * ordinary route /api/me. The MCP routes answer `{sub, client_id}` of the token.
 */
export interface McpStackOptions {
  clientMetadata?: StackOptions['clientMetadata']
  consentPage?: StackOptions['consentPage']
  /**
   * The MCP servers at /mcp and /other-mcp are the MCP TypeScript SDK's (`McpServer` on its
   * Streamable HTTP transport, stateless), with one tool, `whoami`, answering the token's `sub`
   * and `client_id`; without it /mcp answers those as plain JSON.
   */
  sdkServer?: McpServerFactory
}

/** Handles one MCP request with the SDK's server for the token's user (see McpStackOptions.sdkServer). */
export type McpServerFactory = (
  request: FastifyRequest,
  reply: FastifyReply,
  user: { sub: string | undefined; client_id: string | undefined },
) => Promise<void>

export async function startMcpStack(
  database: string,
  user: { email: string; password: string },
  options: McpStackOptions = {},
): Promise<McpStack> {
  const reservation = await reservePort()
  const publicOrigin = `http://localhost:${reservation.port}`
  const publicUrl = `${publicOrigin}/auth`
  const resource = `${publicOrigin}/mcp`
  const otherResource = `${publicOrigin}/other-mcp`
  const backend = await startSupabaseAuth({
    publicUrl,
    database,
    extraEnv: {
      GOTRUE_HOOK_CUSTOM_ACCESS_TOKEN_ENABLED: 'true',
      GOTRUE_HOOK_CUSTOM_ACCESS_TOKEN_URI: 'pg-functions://postgres/public/mcp_access_token_hook',
    },
  })
  let gateway: Gateway
  try {
    await reservation.release()
    await runPsql(postgresTarget(), backend.database, mcpHookSql(resource))
    gateway = await startGateway(backend, {
      port: reservation.port,
      prefix: '/auth',
      label: 'authgate in front of an MCP server',
      ...(options.clientMetadata ? { clientMetadata: options.clientMetadata } : {}),
      ...(options.consentPage ? { consentPage: options.consentPage } : {}),
      beforeListen: async (app) => {
        await app.register(authgateProtect, {
          backendUrl: new URL(backend.url),
          issuer: publicUrl,
          resources: [
            { resource, resourceName: 'Todo MCP server', scopesSupported: ['openid', 'email'] },
            { resource: otherResource, resourceName: 'Another MCP server', scopesSupported: ['openid', 'email'] },
          ],
          hookScopes: ['todos:read'],
        })
        const answer = async (request: { user: { sub: string; client_id: string | undefined } | null }) => ({
          sub: request.user?.sub,
          client_id: request.user?.client_id,
        })
        const sdk = options.sdkServer
        if (sdk !== undefined) {
          // The SDK's transport writes the answer itself (JSON, SSE, 202, 405), outside the document.
          for (const [url, res] of [
            ['/mcp', resource],
            ['/other-mcp', otherResource],
          ] as const)
            app.route(
              defineRoute({
                method: ['GET', 'POST', 'DELETE'],
                url,
                hide: true,
                auth: { resource: res },
                handler: (request, reply) =>
                  sdk(request, reply, { sub: request.user?.sub, client_id: request.user?.client_id }),
              }),
            )
        } else
          app.route(defineRoute({ method: 'POST', url: '/mcp', tags: ['MCP'], auth: { resource }, handler: answer }))
        app.route(
          defineRoute({
            method: 'POST',
            url: '/mcp/todos',
            tags: ['MCP'],
            auth: { resource, scope: 'todos:read' },
            handler: answer,
          }),
        )
        app.route(defineRoute({ method: 'GET', url: '/api/me', tags: ['App'], auth: 'required', handler: answer }))
      },
    })
  } catch (error) {
    await backend.stop()
    throw error
  }
  const lines: string[] = []
  const viaGateway: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString())
    assert.equal(url.origin, publicOrigin, "a request left authgate's origin")
    const response = await fetch(`${gateway.url}${url.pathname}${url.search}`, init)
    lines.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search} -> ${response.status}`)
    return response
  }
  const client = new GoTrueClient({
    url: `${gateway.url}/auth`,
    persistSession: false,
    autoRefreshToken: false,
    detectSessionInUrl: false,
  })
  const signUp = await client.signUp(user)
  assert.equal(signUp.error, null)
  const sessionToken = signUp.data.session?.access_token ?? ''
  assert.ok(sessionToken)
  return {
    backend,
    gateway,
    publicOrigin,
    publicUrl,
    resource,
    otherResource,
    fetch: viaGateway,
    lines,
    user: client,
    sessionToken,
    stop: async () => {
      try {
        await gateway.close()
      } finally {
        await backend.stop()
      }
    },
  }
}
