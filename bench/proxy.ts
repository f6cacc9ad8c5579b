/**
 * Forwarding throughput: authgate vs a hand-configured nginx reverse proxy, both in front of the
 * same backend (nginx answering a fixed JSON body, so the backend is never the bottleneck), measured
 * with wrk in one run, interleaved (A B A B ...) because this machine is shared and noisy.
 * Never pass/fail: it prints figures and ratios.
 *
 *   node bench/proxy.ts [--duration 5] [--connections 32] [--rounds 3]
 *
 * Needs nginx and wrk (Debian packages).
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app.ts'
import { parseBackendUrl } from '../src/config.ts'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
  },
})

for (const bin of ['nginx', 'wrk']) {
  if (spawnSync('which', [bin]).status !== 0) {
    console.error(`${bin} is required (apt-get install -y ${bin})`)
    process.exit(1)
  }
}

const BACKEND_PORT = 19401
const NGINX_PROXY_PORT = 19402
const dir = mkdtempSync(join(tmpdir(), 'authgate-bench-'))
const body = '{"external":{"email":true,"phone":false},"disable_signup":false,"mailer_autoconfirm":true}'
writeFileSync(
  join(dir, 'nginx.conf'),
  `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  # The backend: fixed answers, like a fast Supabase Auth.
  server {
    listen 127.0.0.1:${BACKEND_PORT};
    location / { default_type application/json; return 200 '${body}'; }
  }
  # The peer: nginx as people configure it in front of Supabase Auth (keep-alive upstream, prefix stripped).
  upstream auth { server 127.0.0.1:${BACKEND_PORT}; keepalive 64; }
  server {
    listen 127.0.0.1:${NGINX_PROXY_PORT};
    location /auth/ {
      proxy_pass http://auth/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header Sb-Forwarded-For "";
      proxy_set_header X-JWT-AUD "";
    }
  }
}
`,
)
writeFileSync(
  join(dir, 'post.lua'),
  `wrk.method = "POST"\nwrk.body = '{"email":"user@example.com","password":"correct-horse-battery"}'\nwrk.headers["Content-Type"] = "application/json"\n`,
)

const nginx = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'inherit' })
await new Promise((r) => setTimeout(r, 500))

const app = await buildApp({
  config: { backendUrl: parseBackendUrl('bench', `http://127.0.0.1:${BACKEND_PORT}`), backendConnections: 64 },
  rateLimit: false,
})
await app.listen({ port: 0, host: '127.0.0.1' })
const authgatePort = (app.server.address() as { port: number }).port

/** wrk in a child process, so authgate's event loop is not shared with the load generator's parsing. */
function wrk(port: number, path: string, post: boolean): Promise<{ rps: number; p50: string; p99: string }> {
  return new Promise((resolve, reject) => {
    const args = [
      '-t1',
      `-c${values.connections}`,
      `-d${values.duration}s`,
      '--latency',
      ...(post ? ['-s', join(dir, 'post.lua')] : []),
      `http://127.0.0.1:${port}${path}`,
    ]
    const child = spawn('wrk', args)
    let out = ''
    child.stdout.on('data', (c) => (out += c))
    child.on('exit', (code) => {
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
      const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)
      if (code !== 0 || !rps) return reject(new Error(out))
      if (non2xx) return reject(new Error(`non-2xx answers: ${non2xx[1]}\n${out}`))
      resolve({ rps, p50: /50%\s+(\S+)/.exec(out)?.[1] ?? '?', p99: /99%\s+(\S+)/.exec(out)?.[1] ?? '?' })
    })
  })
}

const cases = [
  ['GET /auth/settings', '/auth/settings', false],
  ['POST /auth/token (JSON body validated by authgate)', '/auth/token?grant_type=password', true],
] as const
try {
  for (const [name, path, post] of cases) {
    const a: number[] = []
    const n: number[] = []
    let lastA, lastN
    for (let i = 0; i < Number(values.rounds); i++) {
      lastA = await wrk(authgatePort, path, post)
      a.push(lastA.rps)
      lastN = await wrk(NGINX_PROXY_PORT, path, post)
      n.push(lastN.rps)
    }
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
    console.log(
      `\n${name}  (${values.connections} connections, ${values.rounds} × ${values.duration}s each, interleaved)`,
    )
    console.log(
      `  authgate  median ${med(a).toFixed(0)} req/s  [${a.map((x) => x.toFixed(0)).join(', ')}]  last p50 ${lastA!.p50} p99 ${lastA!.p99}`,
    )
    console.log(
      `  nginx     median ${med(n).toFixed(0)} req/s  [${n.map((x) => x.toFixed(0)).join(', ')}]  last p50 ${lastN!.p50} p99 ${lastN!.p99}`,
    )
    console.log(`  ratio authgate/nginx: ${(med(a) / med(n)).toFixed(2)}`)
  }
} finally {
  await app.close()
  nginx.kill('SIGTERM')
}
