import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { AUTH_ROUTES } from '../../src/auth/routes/index.ts'
import { chromiumUnavailableReason, launchChromium } from '../../e2e/support/chromium.ts'
import { realisticApp } from '../openapi/support/realistic-app.ts'

/**
 * The reference page in a real browser, served by a real listening server: the Auth, OAuth and
 * Passkey groups render their operations, and no request leaves this machine.
 */
const artifacts = fileURLToPath(new URL('../../artifacts/', import.meta.url))

test(
  'the docs page renders the Auth, OAuth and Passkey operations with every request staying on localhost',
  { skip: (await chromiumUnavailableReason()) ?? false, timeout: 120_000 },
  async () => {
    const app = await realisticApp()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    const browser = await launchChromium()
    try {
      const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } })
      const requests: string[] = []
      context.on('request', (r) => requests.push(r.url()))
      const violations: Array<{ directive: string; blocked: string; source: string }> = []
      await context.exposeBinding(
        'reportViolation',
        (_src, v: { directive: string; blocked: string; source: string }) => {
          violations.push(v)
        },
      )
      await context.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
          void (window as unknown as { reportViolation: (v: unknown) => Promise<void> }).reportViolation({
            directive: e.violatedDirective,
            blocked: e.blockedURI,
            source: e.sourceFile,
          })
        })
      })
      const page = await context.newPage()
      const pageErrors: string[] = []
      page.on('pageerror', (err) => pageErrors.push(err.message))

      const response = await page.goto(`${origin}/docs`)
      assert.equal(response?.status(), 200)
      const doc = (await app.inject('/openapi.json')).json() as {
        paths: Record<string, Record<string, { operationId: string; summary?: string }>>
      }

      for (const tag of ['Auth', 'OAuth', 'Passkey'] as const) {
        const open = page.getByRole('button', { name: `Open Group - ${tag}` })
        await page
          .getByRole('button', { name: new RegExp(`^(Open|Close) Group - ${tag}$`) })
          .waitFor({ timeout: 30_000 })
        if (await open.count()) await open.first().click()
        const routes = AUTH_ROUTES.filter((r) => r.tag === tag)
        assert.ok(routes.length > 0)
        for (const r of routes) await page.getByText(r.summary, { exact: true }).first().waitFor({ timeout: 15_000 })
        // Open one operation of the group: its content (with its operation id) is rendered.
        const first = routes[0]!
        const operationId = doc.paths[`/auth${first.path}`]![first.method.toLowerCase()]!.operationId
        await page.getByText(first.summary, { exact: true }).first().click()
        await page.getByText(operationId, { exact: true }).first().waitFor({ timeout: 15_000 })
      }

      await mkdir(artifacts, { recursive: true })
      await page.getByText(AUTH_ROUTES[0]!.summary, { exact: true }).first().click()
      // Give late requests (fonts, images, telemetry) time to show up before judging them.
      await page.waitForTimeout(1500)
      await page.screenshot({ path: `${artifacts}docs-page.png` })

      const outside = requests.filter(
        (u) =>
          !(
            u.startsWith('http://127.0.0.1:') ||
            u.startsWith('http://localhost:') ||
            u.startsWith('data:') ||
            u.startsWith('blob:')
          ),
      )
      assert.deepEqual(outside, [], 'requests that left the machine')
      assert.ok(requests.includes(`${origin}/docs`))
      assert.ok(requests.some((u) => u.startsWith(`${origin}/docs/scalar-api-reference-`)))
      assert.ok(requests.includes(`${origin}/openapi.json`))
      // The policy is enforced (and the recorder works): an image from another origin is refused.
      const probe = 'http://127.0.0.1:9/csp-probe.png'
      await page.evaluate((src) => {
        const img = document.createElement('img')
        img.src = src
        document.body.append(img)
      }, probe)
      for (let i = 0; i < 50 && !violations.some((v) => v.blocked === probe); i++) await page.waitForTimeout(100)
      assert.ok(
        violations.some((v) => v.directive === 'img-src' && v.blocked === probe),
        'the CSP refuses images from elsewhere',
      )

      // The one violation allowed: zod (bundled) probes `Function('')` to decide whether to JIT, and
      // falls back when the CSP refuses. Everything else (fonts, images, connections) stays clean.
      const unexpected = violations.filter(
        (v) => v.blocked !== probe && !(v.directive === 'script-src' && v.blocked === 'eval'),
      )
      assert.deepEqual(unexpected, [], 'CSP violations')
      assert.deepEqual(pageErrors, [])
    } finally {
      await browser.close()
      await app.close()
    }
  },
)
