import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyRequest } from 'fastify'
import {
  consentTickets,
  ticketOnConsentRedirect,
  TICKET_TTL_MS,
  type ConsentTickets,
} from '../../../src/auth/consent-page/ticket.ts'

const ID = 'ppb3djtqzpsdmxbi7lhkgusc4cpj35ur'
const SECRET = 'a-secret-of-at-least-thirty-two-characters'

test('a ticket holds for its authorization until it expires, and only under the key that made it', () => {
  const clock = { now: 1_000_000_000 }
  const tickets = consentTickets(SECRET, '/oauth/consent', () => clock.now)
  const ticket = tickets.issue(ID)
  assert.match(ticket, /^\d+\.[A-Za-z0-9_-]{32}$/)
  assert.equal(tickets.valid(ID, ticket), true)
  assert.equal(tickets.valid('another0authorization0id00000000', ticket), false, 'bound to its authorization')
  assert.equal(consentTickets('another-secret-of-thirty-two-characters!', '/oauth/consent').valid(ID, ticket), false)
  const [expiry, mac] = ticket.split('.') as [string, string]
  assert.equal(tickets.valid(ID, `${Number(expiry) + 3600}.${mac}`), false, 'its expiry cannot be moved')
  for (const forged of [undefined, '', 'x', `${expiry}.`, `${expiry}.${mac}x`, `${expiry}.${mac}.1`])
    assert.equal(tickets.valid(ID, forged), false, String(forged))
  clock.now += TICKET_TTL_MS - 1000
  assert.equal(tickets.valid(ID, ticket), true)
  clock.now += 2000
  assert.equal(tickets.valid(ID, ticket), false, 'expired with the authorization')
})

test('the /oauth/authorize redirect to the page gets the ticket; any other answer goes as it came', () => {
  const tickets: ConsentTickets = consentTickets(SECRET, '/oauth/consent')
  const request = { server: { authgate: { consentTickets: tickets } } } as unknown as FastifyRequest
  const redirect = (location: string, status = 302) => ({
    status,
    headers: ['Location', location, 'Content-Length', '0'],
    body: Buffer.alloc(0),
  })
  const mended = ticketOnConsentRedirect(
    redirect(`https://api.example.com/oauth/consent?authorization_id=${ID}`),
    request,
  )
  assert.equal(mended.headers[0], 'Location')
  const url = new URL(mended.headers[1]!)
  assert.equal(url.searchParams.get('authorization_id'), ID)
  assert.equal(tickets.valid(ID, url.searchParams.get('ticket')), true)
  assert.deepEqual(mended.headers.slice(2), ['Content-Length', '0'])

  for (const answer of [
    redirect('http://localhost:3000/cb?error=access_denied&state=s'),
    redirect(`https://api.example.com/elsewhere?authorization_id=${ID}`),
    redirect('https://api.example.com/oauth/consent'),
    redirect(`https://api.example.com/oauth/consent?authorization_id=${ID}&ticket=given`),
    redirect(`https://api.example.com/oauth/consent?authorization_id=${ID}`, 200),
  ])
    assert.deepEqual(ticketOnConsentRedirect(answer, request), answer)
  const off = { server: { authgate: { consentTickets: undefined } } } as unknown as FastifyRequest
  const plain = redirect(`https://api.example.com/oauth/consent?authorization_id=${ID}`)
  assert.deepEqual(ticketOnConsentRedirect(plain, off), plain, 'no page, no ticket')
})
