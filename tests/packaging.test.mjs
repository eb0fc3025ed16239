// Packaging end-to-end, as a new user: `npm pack` the main package and the host's platform
// package, serve them from a registry on 127.0.0.1, then with a fresh npm cache and no npmrc
// `npx -y ptyjobs` is an MCP server, and `require('ptyjobs')` loads the binding.
// Needs `npm run build:packages:host` (the root build runs it).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  NPM_DIR, VERSION, HOST_TRIPLE, HOST_PACKAGE_DIR, HOST_BINARY, platform, Cleanup, McpClient,
  runSync, runAsync, startRegistry, freshNpmEnv, runJobThroughMcp, cleanEnv
} from './helpers/npm.mjs'

const HOST_PACKAGE = platform.packageName(HOST_TRIPLE)
const ADDON = `ptyjobs.${HOST_TRIPLE}.node`
const cleanup = new Cleanup()
let work, registry, tarballs

function npmPack (dir, dest) {
  const r = runSync('npm', ['pack', dir, '--pack-destination', dest, '--json'], { env: freshNpmEnv(cleanup.dir(), 'http://127.0.0.1:9/') })
  assert.equal(r.status, 0, r.stderr)
  const [info] = JSON.parse(r.stdout)
  return { file: join(dest, info.filename), files: info.files.map((f) => f.path) }
}

/** `tar -tv` lines of a tarball, keyed by path. */
function tarListing (file) {
  const r = runSync('tar', ['-tvzf', file])
  assert.equal(r.status, 0, r.stderr)
  const map = new Map()
  for (const line of r.stdout.trim().split('\n')) map.set(line.split(/\s+/).pop(), line)
  return map
}

before(async () => {
  assert.ok(existsSync(HOST_BINARY), `${HOST_BINARY} is missing: run npm run build:packages:host (the root build does)`)
  assert.ok(existsSync(join(HOST_PACKAGE_DIR, ADDON)), `${ADDON} is missing from npm/${HOST_TRIPLE}: run npm run build:packages:host`)
  assert.ok(existsSync(join(NPM_DIR, 'ptyjobs', 'index.js')), 'npm/ptyjobs/index.js (the binding loader) is missing: run npm run build:packages:host')
  work = cleanup.dir('ptyjobs-packaging-')
  const dest = join(work, 'tarballs')
  mkdirSync(dest)
  tarballs = { main: npmPack(join(NPM_DIR, 'ptyjobs'), dest), host: npmPack(HOST_PACKAGE_DIR, dest) }
  // Every platform package has a packument, as on the real registry; only the host's has a
  // tarball. npm must pick by os/cpu/libc from the packument and never fetch another tarball.
  const packages = [
    { manifest: JSON.parse(readFileSync(join(NPM_DIR, 'ptyjobs', 'package.json'), 'utf8')), tarball: tarballs.main.file },
    { manifest: JSON.parse(readFileSync(join(HOST_PACKAGE_DIR, 'package.json'), 'utf8')), tarball: tarballs.host.file }
  ]
  for (const [triple, t] of Object.entries(platform.TARGETS)) {
    if (t.supported && triple !== HOST_TRIPLE) packages.push({ manifest: JSON.parse(readFileSync(join(NPM_DIR, triple, 'package.json'), 'utf8')) })
  }
  registry = await startRegistry(packages)
  cleanup.add(() => registry.close())
})
after(() => cleanup.run())

function assertOnlyHostTarballsFetched () {
  const fetched = registry.requests.filter((r) => r.endsWith('.tgz')).map((r) => r.split('/-/')[0].replace(/^GET \//, ''))
  assert.deepEqual([...new Set(fetched)].sort(), ['ptyjobs', HOST_PACKAGE].sort(), registry.requests.join('\n'))
}

function assertInstalled (nodeModules) {
  const ours = readdirSync(nodeModules).filter((n) => n.startsWith('ptyjobs')).sort()
  assert.deepEqual(ours, ['ptyjobs', HOST_PACKAGE].sort(), `only the matching platform package may be installed, got ${ours}`)
  const bin = join(nodeModules, HOST_PACKAGE, platform.binaryName(process.platform))
  assert.ok(statSync(bin).mode & 0o100, `${bin} lost its executable bit`)
  assert.equal(JSON.parse(readFileSync(join(nodeModules, HOST_PACKAGE, 'package.json'), 'utf8')).version, VERSION)
}

test('the tarballs carry what they should, the server with its executable bit', () => {
  const main = tarListing(tarballs.main.file)
  for (const f of ['package/package.json', 'package/bin/ptyjobs.js', 'package/lib/platform.js', 'package/index.js', 'package/index.d.ts']) {
    assert.ok(main.has(f), `${f} missing from ${tarballs.main.file}: ${[...main.keys()]}`)
  }
  assert.deepEqual([...main.keys()].filter((f) => f.endsWith('.node') || f.endsWith('/ptyjobs')), [], 'no binaries in the main package')
  const host = tarListing(tarballs.host.file)
  assert.deepEqual([...host.keys()].sort(), ['package/package.json', `package/${ADDON}`, 'package/ptyjobs'].sort())
  assert.match(host.get('package/ptyjobs'), /^-rwxr-xr-x/)
  const pkg = JSON.parse(readFileSync(join(NPM_DIR, 'ptyjobs', 'package.json'), 'utf8'))
  for (const [name, range] of Object.entries(pkg.optionalDependencies)) assert.equal(range, VERSION, name)
})

test('npx -y ptyjobs from a fresh cache is an MCP server: initialize, tools/list, execute_command, get_job_output', async () => {
  const dir = cleanup.dir('ptyjobs-npx-')
  const env = freshNpmEnv(dir, registry.url)
  const cwd = join(dir, 'somewhere')
  mkdirSync(cwd)
  const child = cleanup.spawn('npx', ['-y', '--registry', registry.url, 'ptyjobs'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
  const client = new McpClient(child)
  const init = await client.initialize(180_000) // includes npx fetching and installing
  assert.equal(init.serverInfo.name, 'ptyjobs')
  assert.equal(init.serverInfo.version, VERSION)
  const { output } = await runJobThroughMcp(client, 'printf "%s-%s\\n" packaged npx', 'packaged-npx')
  assert.ok(!output.isError)
  child.stdin.end()
  const { code, signal } = await child.exited
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, child.stderrText)

  const npx = join(env.npm_config_cache, '_npx')
  const installs = readdirSync(npx)
  assert.equal(installs.length, 1)
  assertInstalled(join(npx, installs[0], 'node_modules'))
  assertOnlyHostTarballsFetched()
})

test('require(\'ptyjobs\') in a fresh project installed from the registry loads the binding and runs a job', async () => {
  const dir = cleanup.dir('ptyjobs-require-')
  const env = freshNpmEnv(dir, registry.url)
  const project = join(dir, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'a-project', version: '1.0.0', private: true }))
  const install = await runAsync('npm', ['install', `ptyjobs@${VERSION}`, '--registry', registry.url], { cwd: project, env })
  assert.equal(install.status, 0, install.stderr)
  assertInstalled(join(project, 'node_modules'))
  const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8'))
  assert.equal(lock.packages['node_modules/ptyjobs'].optionalDependencies[HOST_PACKAGE], VERSION)
  // The lockfile records every platform package (from their packuments), so `npm ci` from it
  // on another platform still finds that platform's package.
  for (const [triple, t] of Object.entries(platform.TARGETS)) {
    if (!t.supported) continue
    const entry = lock.packages[`node_modules/${platform.packageName(triple)}`]
    assert.ok(entry && entry.optional && entry.version === VERSION, `lockfile entry for ${triple}: ${JSON.stringify(entry)}`)
  }

  const script = `
    const { JobManager } = require('ptyjobs')
    const m = new JobManager()
    const job = m.execute('echo from-the-$((2+3))-binding')
    m.wait(job.jobId, { timeoutMs: 20000 }).then(async (info) => {
      const out = m.output(job.jobId)
      await m.close()
      process.stdout.write(JSON.stringify({ status: info.status, output: out.output, addon: require.resolve('${HOST_PACKAGE}') }))
    })`
  const r = runSync(process.execPath, ['-e', script], { cwd: project, env: cleanEnv() })
  assert.equal(r.status, 0, r.stderr)
  const res = JSON.parse(r.stdout)
  assert.equal(res.status, 'completed')
  assert.match(res.output, /from-the-5-binding/)
  assert.equal(res.addon, join(project, 'node_modules', HOST_PACKAGE, ADDON))

  const bin = runSync(join(project, 'node_modules', '.bin', 'ptyjobs'), ['--version'], { env: cleanEnv() })
  assert.equal(bin.stdout.trim(), `ptyjobs ${VERSION}`)
})

