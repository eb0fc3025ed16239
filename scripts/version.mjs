#!/usr/bin/env node
// The one version source: [workspace.package] version in the root Cargo.toml.
// Writes it into every npm/*/package.json (each platform package.json is generated whole
// from the platform table in npm/ptyjobs/lib/platform.js) and into the main package's
// optionalDependencies.
//   node scripts/version.mjs            stamp (rewrite the files that differ)
//   node scripts/version.mjs --check    exit 1 if any file is out of date (CI, tests)
//   node scripts/version.mjs --tag v1.2.3 --check   also require the git tag to match
//   node scripts/version.mjs --list     print the published platform dirs (npm/<triple>), one a line
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
export const NPM_DIR = join(ROOT, 'npm')
const require = createRequire(import.meta.url)
export const platform = require('../npm/ptyjobs/lib/platform.js')

export function workspaceVersion (cargoToml = readFileSync(join(ROOT, 'Cargo.toml'), 'utf8')) {
  const section = cargoToml.split(/^\[/m).find((s) => s.startsWith('workspace.package]'))
  const m = section && section.match(/^version\s*=\s*"([^"]+)"/m)
  if (!m) throw new Error('no version in [workspace.package] of Cargo.toml')
  return m[1]
}

const REPOSITORY = { type: 'git', url: 'git+https://github.com/ptyjobs/ptyjobs.git' }

/** Triples that get a package (and an optionalDependency). */
export function publishedTriples () {
  return Object.keys(platform.TARGETS).filter((t) => platform.TARGETS[t].supported)
}

export function platformManifest (triple, version) {
  const t = platform.TARGETS[triple]
  const bin = platform.binaryName(t.os)
  const node = `ptyjobs.${triple}.node`
  const manifest = {
    name: platform.packageName(triple),
    version,
    os: [t.os],
    cpu: [t.cpu]
  }
  if (t.libc) manifest.libc = [t.libc]
  Object.assign(manifest, {
    files: [bin, node],
    main: node,
    license: 'MIT',
    repository: REPOSITORY
  })
  return manifest
}

export function mainManifest (current, version) {
  const optionalDependencies = {}
  for (const triple of publishedTriples()) optionalDependencies[platform.packageName(triple)] = version
  return { ...current, version, optionalDependencies }
}

function render (obj) {
  return JSON.stringify(obj, null, 2) + '\n'
}

/** Returns the list of files whose content differs from what it should be. */
export function stamp ({ check = false, version = workspaceVersion() } = {}) {
  const stale = []
  const want = new Map()
  for (const triple of publishedTriples()) {
    want.set(join(NPM_DIR, triple, 'package.json'), render(platformManifest(triple, version)))
  }
  const mainPath = join(NPM_DIR, 'ptyjobs', 'package.json')
  want.set(mainPath, render(mainManifest(JSON.parse(readFileSync(mainPath, 'utf8')), version)))
  // The MCP registry entry names the npm package's version too.
  const serverPath = join(ROOT, 'server.json')
  if (existsSync(serverPath)) {
    const server = JSON.parse(readFileSync(serverPath, 'utf8'))
    server.version = version
    for (const p of server.packages ?? []) p.version = version
    want.set(serverPath, render(server))
  }
  for (const [file, text] of want) {
    const have = existsSync(file) ? readFileSync(file, 'utf8') : null
    if (have === text) continue
    stale.push(file)
    if (!check) {
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, text)
    }
  }
  return stale
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2)
  if (args.includes('--list')) {
    process.stdout.write(publishedTriples().join('\n') + '\n')
    process.exit(0)
  }
  const check = args.includes('--check')
  const tagAt = args.indexOf('--tag')
  const version = workspaceVersion()
  if (tagAt !== -1) {
    const tag = args[tagAt + 1] || ''
    if (tag.replace(/^v/, '') !== version) {
      console.error(`version.mjs: tag "${tag}" does not match the workspace version ${version}`)
      process.exit(1)
    }
  }
  const stale = stamp({ check, version })
  const rel = stale.map((f) => f.slice(ROOT.length + 1))
  if (check && stale.length) {
    console.error(`version.mjs: out of date with version ${version}: ${rel.join(', ')} (run node scripts/version.mjs)`)
    process.exit(1)
  }
  console.error(check ? `version.mjs: every npm package is at ${version}` : `version.mjs: ${version}${rel.length ? ' written to ' + rel.join(', ') : ' (nothing to change)'}`)
}
