// Where people find and install ptyjobs: the MCP registry entry (server.json) and the MCP
// bundle (.mcpb) are checked against the published schemas, kept in tests/fixtures (see the
// README there), and the bundle built by scripts/build-mcpb.mjs is opened and read back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inflateRawSync } from 'node:zlib'
import { createRequire } from 'node:module'
import { ROOT, NPM_DIR, VERSION, HOST_TRIPLE, HOST_BINARY } from './helpers/npm.mjs'
import { manifest, zip } from '../scripts/build-mcpb.mjs'

const require = createRequire(import.meta.url)
const Ajv = require('ajv')
const addFormats = require('ajv-formats')

function validator (schemaFile) {
  const ajv = new Ajv({ allErrors: true, strict: false })
  addFormats(ajv)
  return ajv.compile(JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', schemaFile), 'utf8')))
}

function assertValid (validate, doc, what) {
  const ok = validate(doc)
  assert.ok(ok, `${what}: ${JSON.stringify(validate.errors, null, 2)}`)
}

/** The entries of a zip archive: name → { data, mode }. */
function unzip (buf) {
  const entries = new Map()
  const end = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]))
  assert.ok(end >= 0, 'no end of central directory')
  const count = buf.readUInt16LE(end + 10)
  let at = buf.readUInt32LE(end + 16)
  for (let i = 0; i < count; i++) {
    assert.equal(buf.readUInt32LE(at), 0x02014b50)
    const method = buf.readUInt16LE(at + 10)
    const size = buf.readUInt32LE(at + 20)
    const nameLen = buf.readUInt16LE(at + 28)
    const extra = buf.readUInt16LE(at + 30)
    const comment = buf.readUInt16LE(at + 32)
    const mode = buf.readUInt32LE(at + 38) >>> 16
    const offset = buf.readUInt32LE(at + 42)
    const name = buf.toString('utf8', at + 46, at + 46 + nameLen)
    const start = offset + 30 + buf.readUInt16LE(offset + 26) + buf.readUInt16LE(offset + 28)
    const packed = buf.subarray(start, start + size)
    entries.set(name, { data: method === 8 ? inflateRawSync(packed) : packed, mode })
    at += 46 + nameLen + extra + comment
  }
  return entries
}

test('server.json is a valid MCP registry entry for the npm package that names it', () => {
  const server = JSON.parse(readFileSync(join(ROOT, 'server.json'), 'utf8'))
  assertValid(validator('server.schema.2025-12-11.json'), server, 'server.json')
  assert.equal(server.$schema, 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json')
  const pkg = JSON.parse(readFileSync(join(NPM_DIR, 'ptyjobs', 'package.json'), 'utf8'))
  // The registry checks ownership through mcpName in the published package.json.
  assert.equal(pkg.mcpName, server.name)
  assert.equal(server.version, pkg.version)
  const npm = server.packages.find((p) => p.registryType === 'npm')
  assert.equal(npm.identifier, pkg.name)
  assert.equal(npm.version, VERSION)
  assert.equal(npm.transport.type, 'stdio')
  // The schema is no rubber stamp: a broken entry fails it.
  const validate = validator('server.schema.2025-12-11.json')
  assert.equal(validate({ ...server, name: 'no-slash' }), false)
  assert.equal(validate({ ...server, packages: [{ ...npm, version: 'latest' }] }), false)
})

test('every bundle manifest is valid against the MCPB manifest schema', () => {
  const validate = validator('mcpb-manifest-v0.3.schema.json')
  const tools = [{ name: 'execute_command', description: 'Start a job.' }]
  for (const triple of ['linux-x64-gnu', 'linux-arm64-musl', 'darwin-arm64']) {
    const m = manifest({ version: VERSION, triple, tools })
    assertValid(validate, m, triple)
    assert.equal(m.server.type, 'binary')
    assert.equal(m.server.mcp_config.command, '${__dirname}/' + m.server.entry_point)
  }
  assert.equal(validate({ ...manifest({ version: VERSION, triple: 'linux-x64-gnu' }), server: { type: 'binary' } }), false)
})

test('the zip writer round-trips names, bytes and modes', () => {
  const entries = unzip(zip([
    { name: 'a.txt', data: Buffer.from('hello') },
    { name: 'dir/bin', data: Buffer.alloc(100_000, 7), mode: 0o755 }
  ]))
  assert.equal(entries.get('a.txt').data.toString(), 'hello')
  assert.equal(entries.get('dir/bin').data.length, 100_000)
  assert.equal(entries.get('dir/bin').mode & 0o777, 0o755)
})

test('build-mcpb makes a bundle of the host binary whose manifest lists the server\'s own tools', (t) => {
  if (!existsSync(HOST_BINARY)) {
    t.skip(`${HOST_BINARY} is missing: run npm run build`)
    return
  }
  const out = mkdtempSync(join(tmpdir(), 'ptyjobs-mcpb-'))
  t.after(() => rmSync(out, { recursive: true, force: true }))
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-mcpb.mjs'), '--binary', HOST_BINARY,
    '--triple', HOST_TRIPLE, '--out', out], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, PTYJOBS_BINARY: HOST_BINARY } })
  assert.equal(r.status, 0, r.stderr)
  const bundle = join(out, `ptyjobs-${VERSION}-${HOST_TRIPLE}.mcpb`)
  const entries = unzip(readFileSync(bundle))
  const m = JSON.parse(entries.get('manifest.json').data.toString())
  assertValid(validator('mcpb-manifest-v0.3.schema.json'), m, 'manifest.json')
  const server = entries.get(m.server.entry_point)
  assert.ok(server, `${m.server.entry_point} in the bundle`)
  assert.ok(server.data.equals(readFileSync(HOST_BINARY)), 'the binary is bundled as built')
  assert.equal(server.mode & 0o111, 0o111, 'executable')
  const names = m.tools.map((t) => t.name)
  for (const tool of ['execute_command', 'wait_for_job', 'get_job_output', 'kill_job']) {
    assert.ok(names.includes(tool), `${tool} in ${names}`)
  }
  assert.deepEqual(m.compatibility.platforms, [process.platform])
})
