#!/usr/bin/env node
// Build MCP bundles (.mcpb: a zip with manifest.json, the MCP bundle format Claude Desktop
// installs with one click) from the platform binaries.
//
//   node scripts/build-mcpb.mjs                       one bundle per npm/<triple>/ptyjobs present
//   node scripts/build-mcpb.mjs --binary PATH --triple linux-x64-gnu   one bundle from PATH
//   node scripts/build-mcpb.mjs --out DIR             where bundles go (default dist/mcpb)
//   node scripts/build-mcpb.mjs --manifest-only       print the manifest (host binary) and exit
//
// A bundle is per platform and architecture (the manifest's platform_overrides are per OS
// only): ptyjobs-<version>-<triple>.mcpb holding manifest.json and server/ptyjobs. The tool list
// in the manifest comes from the server itself (tools/list over stdio, from a binary this
// machine can run). Build the binaries first: `npm run build` (host) or
// `npm run build:packages` (every target this machine can build).
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32, deflateRawSync } from 'node:zlib'
import { NPM_DIR, ROOT, platform, publishedTriples, workspaceVersion } from './version.mjs'

const MANIFEST_VERSION = '0.3'

function log (msg) { process.stderr.write(`build-mcpb: ${msg}\n`) }

function arg (name) {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** The tools a server binary lists, as `{ name, description }` (first sentence). */
export async function listTools (exe, timeoutMs = 20_000) {
  const child = spawn(exe, ['--no-persist'], { stdio: ['pipe', 'pipe', 'ignore'] })
  try {
    const answers = new Map()
    const waiting = new Map()
    createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line)
      if (waiting.has(msg.id)) waiting.get(msg.id)(msg)
      else answers.set(msg.id, msg)
    })
    const call = (id, method, params) => new Promise((resolve, reject) => {
      waiting.set(id, resolve)
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
      setTimeout(() => reject(new Error(`${exe}: no answer to ${method}`)), timeoutMs).unref()
    })
    await call(1, 'initialize', {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'build-mcpb', version: '0' }
    })
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n')
    const list = await call(2, 'tools/list', {})
    return list.result.tools.map((t) => ({
      name: t.name,
      description: t.description.split(/(?<=\.)\s/)[0].replace(/\s+/g, ' ')
    }))
  } finally {
    child.kill('SIGKILL')
  }
}

/** The manifest.json of the bundle for `triple`. */
export function manifest ({ version, triple, tools }) {
  const t = platform.TARGETS[triple]
  const bin = platform.binaryName(t.os)
  const m = {
    manifest_version: MANIFEST_VERSION,
    name: 'ptyjobs',
    display_name: 'ptyjobs — background jobs in real terminals',
    version,
    description: 'Run shell commands as background jobs under pseudo-terminals: clean output, waits, input, kill.',
    long_description: 'ptyjobs starts builds, tests, dev servers and REPLs as background jobs, each under its own ' +
      'pseudo-terminal, and gives the model their output as clean text (no colour codes, progress bars at ' +
      'their final state), waits for a pattern, a port or the exit, types into prompts, shows full-screen ' +
      'programs, and kills whole process trees. Job history survives restarts.',
    author: { name: 'ptyjobs contributors', url: 'https://github.com/ptyjobs' },
    repository: { type: 'git', url: 'https://github.com/ptyjobs/ptyjobs' },
    homepage: 'https://github.com/ptyjobs/ptyjobs',
    documentation: 'https://github.com/ptyjobs/ptyjobs#readme',
    support: 'https://github.com/ptyjobs/ptyjobs/issues',
    server: {
      type: 'binary',
      entry_point: `server/${bin}`,
      mcp_config: { command: `\${__dirname}/server/${bin}`, args: [], env: {} }
    },
    keywords: ['terminal', 'pty', 'jobs', 'shell', 'background', 'dev-server', 'tests'],
    license: 'MIT',
    compatibility: { platforms: [t.os] }
  }
  if (tools?.length) {
    m.tools = tools
    m.tools_generated = false
  }
  return m
}

/** A zip archive (deflate) of `entries`: `[{ name, data: Buffer, mode }]`. */
export function zip (entries) {
  const local = []
  const central = []
  let offset = 0
  for (const { name, data, mode = 0o644 } of entries) {
    const nameBuf = Buffer.from(name, 'utf8')
    const packed = deflateRawSync(data, { level: 9 })
    const crc = crc32(data)
    const header = Buffer.alloc(30)
    header.writeUInt32LE(0x04034b50, 0) // local file header
    header.writeUInt16LE(20, 4) // version needed
    header.writeUInt16LE(0x0800, 6) // UTF-8 names
    header.writeUInt16LE(8, 8) // deflate
    header.writeUInt32LE(0, 10) // time, date
    header.writeUInt32LE(crc, 14)
    header.writeUInt32LE(packed.length, 18)
    header.writeUInt32LE(data.length, 22)
    header.writeUInt16LE(nameBuf.length, 26)
    header.writeUInt16LE(0, 28)
    local.push(header, nameBuf, packed)
    const entry = Buffer.alloc(46)
    entry.writeUInt32LE(0x02014b50, 0) // central directory header
    entry.writeUInt16LE((3 << 8) | 20, 4) // made by: Unix, so the mode below is read
    entry.writeUInt16LE(20, 6)
    entry.writeUInt16LE(0x0800, 8)
    entry.writeUInt16LE(8, 10)
    entry.writeUInt32LE(0, 12)
    entry.writeUInt32LE(crc, 16)
    entry.writeUInt32LE(packed.length, 20)
    entry.writeUInt32LE(data.length, 24)
    entry.writeUInt16LE(nameBuf.length, 28)
    entry.writeUInt16LE(0, 30) // extra
    entry.writeUInt16LE(0, 32) // comment
    entry.writeUInt16LE(0, 34) // disk
    entry.writeUInt16LE(0, 36) // internal attributes
    entry.writeUInt32LE(((0o100000 | mode) << 16) >>> 0, 38) // regular file + permissions
    entry.writeUInt32LE(offset, 42)
    central.push(entry, nameBuf)
    offset += header.length + nameBuf.length + packed.length
  }
  const dir = Buffer.concat(central)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(dir.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...local, dir, end])
}

/** Writes the bundle for `triple` from `binary` into `outDir`; returns its path. */
export function buildBundle ({ binary, triple, version, tools, outDir }) {
  const m = manifest({ version, triple, tools })
  const data = zip([
    { name: 'manifest.json', data: Buffer.from(JSON.stringify(m, null, 2) + '\n') },
    { name: m.server.entry_point, data: readFileSync(binary), mode: 0o755 }
  ])
  mkdirSync(outDir, { recursive: true })
  const file = join(outDir, `ptyjobs-${version}-${triple}.mcpb`)
  writeFileSync(file, data)
  return file
}

/** The host's triple and a runnable server binary, if one is built. */
function hostBinary () {
  const libc = process.platform === 'linux' ? platform.detectLibc() : null
  const triple = platform.candidateTriples({ platform: process.platform, arch: process.arch, libc })[0]
  const candidates = [
    process.env.PTYJOBS_BINARY,
    triple && join(NPM_DIR, triple, platform.binaryName(platform.TARGETS[triple].os)),
    join(ROOT, 'target', 'release', 'ptyjobs'),
    join(ROOT, 'target', 'debug', 'ptyjobs')
  ]
  return { triple, binary: candidates.find((p) => p && existsSync(p) && statSync(p).isFile()) }
}

async function main () {
  const version = workspaceVersion()
  const outDir = arg('--out') ?? join(ROOT, 'dist', 'mcpb')
  const host = hostBinary()
  const tools = host.binary ? await listTools(host.binary) : []
  if (!host.binary) log('no runnable server binary: the manifests list no tools')
  if (process.argv.includes('--manifest-only')) {
    process.stdout.write(JSON.stringify(manifest({ version, triple: host.triple, tools }), null, 2) + '\n')
    return
  }
  const jobs = []
  if (arg('--binary')) {
    jobs.push({ binary: arg('--binary'), triple: arg('--triple') ?? host.triple })
  } else {
    for (const triple of publishedTriples()) {
      const binary = join(NPM_DIR, triple, platform.binaryName(platform.TARGETS[triple].os))
      if (existsSync(binary)) jobs.push({ binary, triple })
      else log(`skipped ${triple}: no ${binary} (build it with npm run build:packages)`)
    }
  }
  if (!jobs.length) throw new Error('no platform binary to bundle')
  for (const job of jobs) {
    if (!platform.TARGETS[job.triple]) throw new Error(`unknown triple ${job.triple}`)
    log(`wrote ${buildBundle({ ...job, version, tools, outDir })}`)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => { log(e.message); process.exit(1) })
}
