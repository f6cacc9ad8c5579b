import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  assignOperationIds,
  baseOperationId,
  spelledOperationId,
  type OperationKey,
} from '../../src/openapi/operation-ids.ts'

const ids = (...keys: Array<[string, string] | [string, string, string]>) =>
  assignOperationIds(keys.map(([method, path, explicit]): OperationKey => ({ method, path, explicit })))

test('GET /items and GET /items/{id} share a base id, so both spell their parameters', () => {
  assert.deepEqual(ids(['get', '/items'], ['get', '/items/{id}']), ['getItems', 'getItemsById'])
})

test('ids that are already unique keep the short form, parameters left out', () => {
  assert.deepEqual(ids(['get', '/items/{id}'], ['delete', '/passkeys/{id}'], ['post', '/items']), [
    'getItems',
    'deletePasskeys',
    'postItems',
  ])
})

test('a collision elsewhere does not change unique ids', () => {
  assert.deepEqual(ids(['get', '/items'], ['get', '/items/{id}'], ['get', '/users/{id}']), [
    'getItems',
    'getItemsById',
    'getUsers',
  ])
})

test('an id still shared after spelling the parameters gets a numeric suffix', () => {
  // `/item-s/{id}` and `/item_s/{id}` both spell as getItemSById; `/item-s` joins them on the base.
  assert.deepEqual(ids(['get', '/item-s/{id}'], ['get', '/item_s/{id}'], ['get', '/item-s']), [
    'getItemSById',
    'getItemSById2',
    'getItemS',
  ])
})

test('a suffixed id never takes an id another route has without collision', () => {
  // `/a/b2` is the only route whose id is getAB2, so the collision of `/a-b` and `/a_b` skips to 3.
  const out = ids(['get', '/a-b'], ['get', '/a_b'], ['get', '/a/b2'])
  assert.deepEqual(out, ['getAB', 'getAB3', 'getAB2'])
})

test('several parameters are joined with And; path words are camel-cased', () => {
  assert.equal(spelledOperationId('get', '/users/{user_id}/posts/{id}'), 'getUsersPostsByUserIdAndId')
  assert.equal(
    baseOperationId('get', '/.well-known/oauth-authorization-server'),
    'getWellKnownOauthAuthorizationServer',
  )
  assert.equal(baseOperationId('post', '/oauth/clients/register'), 'postOauthClientsRegister')
  assert.equal(baseOperationId('get', '/'), 'getRoot')
})

test('an explicit operationId wins and generated ids do not take it', () => {
  assert.deepEqual(ids(['get', '/items', 'listEverything'], ['get', '/items/{id}']), ['listEverything', 'getItems'])
  // A generated base equal to an explicit id is a collision: the generated one spells its parameters.
  assert.deepEqual(ids(['get', '/things', 'getItems'], ['get', '/items/{id}']), ['getItems', 'getItemsById'])
  // Two routes stating the same id: the document must stay valid, the later (in path order) is suffixed.
  assert.deepEqual(ids(['get', '/b', 'same'], ['get', '/a', 'same']), ['same2', 'same'])
})

test('ids depend on the set of routes, not on registration order', () => {
  const keys: Array<[string, string]> = [
    ['get', '/items/{id}'],
    ['get', '/items'],
    ['get', '/item-s/{x}'],
    ['get', '/item_s/{x}'],
    ['post', '/items'],
  ]
  const forward = Object.fromEntries(keys.map((k, i) => [k.join(' '), ids(...keys)[i]]))
  const reversed = keys.slice().reverse()
  const backward = Object.fromEntries(reversed.map((k, i) => [k.join(' '), ids(...reversed)[i]]))
  assert.deepEqual(backward, forward)
})
