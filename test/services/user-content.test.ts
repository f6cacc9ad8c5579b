import assert from 'node:assert/strict'
import { test } from 'node:test'
import { StorageClient } from '@supabase/storage-js'
import { chromiumUnavailableReason, launchChromium } from '../../e2e/support/chromium.ts'
import type { FakeBackend } from '../support/fake-backend.ts'
import { PUBLISHABLE, withServices, type ServicesHarness } from './support.ts'

/** An SVG whose script, if it runs, marks its own root element. */
const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">
<script>document.documentElement.setAttribute('data-ran', 'yes')</script>
<rect width="10" height="10"/></svg>`

/**
 * A stand-in for Storage's object routes, as far as this needs: an upload is kept with the type
 * it was declared with, and the public route answers it as Storage does, with that type and no
 * header against script (Storage v1.x sends none).
 */
function storeObjects(upstream: FakeBackend): void {
  const objects = new Map<string, { type: string; body: Buffer }>()
  upstream.handler = (req, res, body) => {
    const path = (req.url ?? '').split('?')[0]!
    const upload = /^\/storage\/object\/([^/]+)\/(.+)$/.exec(path)
    if (req.method === 'POST' && upload && upload[1] !== 'public') {
      objects.set(`${upload[1]}/${upload[2]}`, { type: String(req.headers['content-type']), body })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ Key: `${upload[1]}/${upload[2]}`, Id: 'id' }))
      return
    }
    const object = objects.get(path.replace(/^\/storage\/object\/public\//, ''))
    if (req.method === 'GET' && object) {
      res.writeHead(200, { 'content-type': object.type, 'x-content-type-options': 'sniff-please' })
      res.end(object.body)
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":"404"}')
  }
}

/** Uploads the SVG with storage-js through authgate and gives its public URL. */
async function uploadSvg(h: ServicesHarness): Promise<string> {
  storeObjects(h.upstream)
  const storage = new StorageClient(`${h.url}/storage/v1`, { apikey: PUBLISHABLE })
  const { error } = await storage
    .from('avatars')
    .upload('me.svg', Buffer.from(SVG), { contentType: 'image/svg+xml', upsert: true })
  assert.equal(error, null)
  return storage.from('avatars').getPublicUrl('me.svg').data.publicUrl
}

test("Storage's answers carry nosniff and a sandbox policy; a PDF nosniff alone", async () => {
  const h = await withServices()
  try {
    const url = await uploadSvg(h)
    const svg = await fetch(url)
    assert.equal(svg.status, 200)
    assert.equal(svg.headers.get('content-type'), 'image/svg+xml')
    // The upstream's own value is replaced, not joined.
    assert.equal(svg.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(svg.headers.get('content-security-policy'), 'sandbox')
    assert.equal(await svg.text(), SVG)

    h.upstream.handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7')
    const pdf = await fetch(`${h.url}/storage/v1/object/public/docs/a.pdf`)
    assert.equal(pdf.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(pdf.headers.get('content-security-policy'), null)

    // Storage's JSON answers too (harmless there), and no other service's.
    h.upstream.handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    const list = await fetch(`${h.url}/storage/v1/bucket`, { headers: { apikey: PUBLISHABLE } })
    assert.equal(list.headers.get('content-security-policy'), 'sandbox')
    const rest = await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE } })
    assert.equal(rest.headers.get('content-security-policy'), null)
    assert.equal(rest.headers.get('x-content-type-options'), null)
  } finally {
    await h.close()
  }
})

test('AUTHGATE_STORAGE_SANDBOX off (Storage on an origin of its own): answers as Storage sent them', async () => {
  const h = await withServices({ storageSandbox: false })
  try {
    const svg = await fetch(await uploadSvg(h))
    assert.equal(svg.headers.get('x-content-type-options'), 'sniff-please')
    assert.equal(svg.headers.get('content-security-policy'), null)
  } finally {
    await h.close()
  }
})

test(
  'in Chromium, an uploaded SVG opened from authgate runs no script; with the sandbox off it would',
  { skip: (await chromiumUnavailableReason()) ?? false, timeout: 120_000 },
  async () => {
    const browser = await launchChromium()
    try {
      for (const storageSandbox of [true, false]) {
        const h = await withServices({ storageSandbox })
        try {
          const url = await uploadSvg(h)
          const page = await browser.newPage()
          await page.goto(url)
          const ran = await page.evaluate(() => document.documentElement.getAttribute('data-ran'))
          const origin = await page.evaluate(() => self.origin)
          await page.close()
          if (storageSandbox) {
            assert.equal(ran, null, 'the script ran')
            assert.equal(origin, 'null', 'the document has an opaque origin')
          } else {
            // The control: the same file without the headers runs its script on authgate's origin.
            assert.equal(ran, 'yes')
            assert.equal(origin, new URL(h.url).origin)
          }
        } finally {
          await h.close()
        }
      }
    } finally {
      await browser.close()
    }
  },
)
