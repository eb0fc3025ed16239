// Shared helpers of the launcher and packaging tests: temp dirs, process cleanup,
// polling with deadlines, a minimal MCP (JSON-RPC over stdio) client, a tiny npm registry.
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, readFileSync, existsSync, mkdirSync, cpSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { waitUntil, sessionProcesses, processesWith, structured } from './common.mjs'
export { waitUntil, sessionProcesses as sessionMembers, processesWith, structured }

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const NPM_DIR = join(ROOT, 'npm')
const require = createRequire(import.meta.url)
export const platform = require('../../npm/ptyjobs/lib/platform.js')
export const VERSION = JSON.parse(readFileSync(join(NPM_DIR, 'ptyjobs', 'package.json'), 'utf8')).version
export const HOST_TRIPLE = platform.candidateTriples({ platform: process.platform, arch: process.arch, libc: platform.detectLibc() })[0]
export const HOST_PACKAGE_DIR = join(NPM_DIR, HOST_TRIPLE || 'unsupported')
export const HOST_BINARY = join(HOST_PACKAGE_DIR, platform.binaryName(process.platform))

/** A temp dir removed by the returned cleanup list (see Cleanup). */
export class Cleanup {
  constructor () { this.tasks = [] }
  dir (prefix = 'ptyjobs-test-') {
    const d = mkdtempSync(join(tmpdir(), prefix))
    this.tasks.push(() => rmSync(d, { recursive: true, force: true }))
    return d
  }
  /** Spawn in its own process group; the whole group is SIGKILLed at cleanup if still there. */
  spawn (cmd, args, opts = {}) {
    const child = spawn(cmd, args, { detached: true, ...opts })
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
    child.exited = exited
    child.stdoutText = ''
    child.stderrText = ''
    if (child.stderr) child.stderr.on('data', (d) => { child.stderrText += d })
    this.tasks.push(async () => {
      try { process.kill(-child.pid, 'SIGKILL') } catch (_) {}
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
    })
    return child
  }
  add (fn) { this.tasks.push(fn) }
  async run () {
    for (const t of this.tasks.reverse()) {
      try { await t() } catch (_) {}
    }
    this.tasks = []
  }
}

/** Run to completion and collect output (for short commands only). */
export function runSync (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts })
  if (r.error) throw r.error
  return r
}

/**
 * Run to completion without blocking the event loop (needed whenever the command talks to a
 * server living in this process, such as the test registry). Killed at the deadline.
 */
export function runAsync (cmd, args, opts = {}, ms = 180_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), ms)
    child.on('error', (e) => { clearTimeout(timer); reject(e) })
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr: signal === 'SIGKILL' ? `killed after ${ms} ms\n${stderr}` : stderr })
    })
  })
}

/** Minimal MCP client over a child's stdio (newline-delimited JSON-RPC). */
export class McpClient {
  constructor (child) {
    this.child = child
    this.nextId = 1
    this.pending = new Map()
    this.buffer = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk) => {
      child.stdoutText += chunk
      this.buffer += chunk
      let nl
      while ((nl = this.buffer.indexOf('\n')) !== -1) {
        const line = this.buffer.slice(0, nl).trim()
        this.buffer = this.buffer.slice(nl + 1)
        if (!line) continue
        let msg
        try { msg = JSON.parse(line) } catch (_) { this.failAll(new Error(`server wrote a non-JSON line to stdout: ${line.slice(0, 200)}`)); continue }
        if (msg.id !== undefined && this.pending.has(msg.id)) {
          const { resolve, reject } = this.pending.get(msg.id)
          this.pending.delete(msg.id)
          if (msg.error) reject(Object.assign(new Error(`JSON-RPC error ${msg.error.code}: ${msg.error.message}`), { rpc: msg.error }))
          else resolve(msg.result)
        }
      }
    })
    child.on('exit', (code, signal) => this.failAll(new Error(`server exited (code ${code}, signal ${signal}); stderr: ${child.stderrText.slice(-2000)}`)))
  }
  failAll (err) {
    for (const { reject } of this.pending.values()) reject(err)
    this.pending.clear()
  }
  request (method, params, ms = 30_000) {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`no answer to ${method} within ${ms} ms; stderr: ${this.child.stderrText.slice(-2000)}`))
      }, ms)
      this.pending.set(id, {
        resolve: (v) => { clearTimeout(timer); resolve(v) },
        reject: (e) => { clearTimeout(timer); reject(e) }
      })
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
    })
  }
  notify (method, params) {
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }) + '\n')
  }
  async initialize (ms) {
    const result = await this.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'ptyjobs-npm-tests', version: '0.0.0' }
    }, ms)
    this.notify('notifications/initialized')
    return result
  }
  callTool (name, args, ms) {
    return this.request('tools/call', { name, arguments: args }, ms)
  }
}

/** The first UUID anywhere in a tool result (structured content or text). */
export function findJobId (result) {
  const m = JSON.stringify(result).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i)
  return m && m[0]
}

/** The name of the job-id argument in a tool's input schema (job_id, jobId, id ...). */
export function jobIdParam (tool) {
  const props = Object.keys((tool.inputSchema && tool.inputSchema.properties) || {})
  return props.find((p) => /^job_?id$/i.test(p)) || props.find((p) => /id$/i.test(p)) || 'job_id'
}

/**
 * Run execute_command, then poll get_job_output until `marker` shows up.
 * Returns { jobId, output } where output is the whole get_job_output result.
 */
export async function runJobThroughMcp (client, command, marker, ms = 20_000) {
  const { tools } = await client.request('tools/list', {})
  const names = tools.map((t) => t.name)
  for (const need of ['execute_command', 'get_job_output']) {
    if (!names.includes(need)) throw new Error(`tools/list lacks ${need}: ${names.join(', ')}`)
  }
  const exec = await client.callTool('execute_command', { command })
  if (exec.isError) throw new Error(`execute_command failed: ${JSON.stringify(exec)}`)
  const jobId = findJobId(exec)
  if (!jobId) throw new Error(`no job id in ${JSON.stringify(exec)}`)
  const param = jobIdParam(tools.find((t) => t.name === 'get_job_output'))
  let output
  await waitUntil(async () => {
    output = await client.callTool('get_job_output', { [param]: jobId })
    return !output.isError && JSON.stringify(output).includes(marker)
  }, ms, `${marker} in get_job_output`)
  return { tools, jobId, output }
}

/**
 * A node_modules layout made from the repository's npm/ dirs, no network:
 * <dir>/node_modules/ptyjobs (a copy: its own require() must find siblings) and
 * <dir>/node_modules/ptyjobs-<triple> -> npm/<triple> for each given triple.
 * Returns the launcher path.
 */
export function localLayout (dir, triples) {
  const nm = join(dir, 'node_modules')
  mkdirSync(nm, { recursive: true })
  cpSync(join(NPM_DIR, 'ptyjobs'), join(nm, 'ptyjobs'), { recursive: true })
  for (const t of triples) symlinkSync(join(NPM_DIR, t), join(nm, platform.packageName(t)), 'dir')
  return join(nm, 'ptyjobs', 'bin', 'ptyjobs.js')
}

/** An executable shell script standing in for the server binary. */
export function fakeBinary (dir, body) {
  const file = join(dir, 'fake-ptyjobs')
  writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
  return file
}

/** An environment without npm's run-script variables, so nested npm runs see only what we set. */
export function cleanEnv (extra = {}) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === 'PTYJOBS_BINARY' || k === 'NODE_OPTIONS' || k === 'INIT_CWD') continue
    env[k] = v
  }
  return { ...env, ...extra }
}

/**
 * A tiny npm registry on 127.0.0.1. `packages`: [{ manifest, tarball? }] — the manifest is a
 * package.json; `tarball` a path to an `npm pack` output. A package without a tarball still
 * gets a packument (as on the real registry, where every platform package exists), but its
 * tarball URL answers 404: npm must never ask for it. Every other path is 404.
 */
export async function startRegistry (packages) {
  const requests = []
  const tarballs = new Map()
  const packuments = new Map()
  const server = createServer((req, res) => {
    const url = decodeURIComponent(req.url.split('?')[0])
    requests.push(`${req.method} ${url}`)
    if (req.method === 'GET' && packuments.has(url.slice(1))) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(packuments.get(url.slice(1))))
      return
    }
    if (req.method === 'GET' && tarballs.has(url)) {
      const body = tarballs.get(url)
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
      res.end(body)
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' })
    res.end('{"error":"not found"}')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${server.address().port}`
  for (const { manifest, tarball } of packages) {
    const { name, version } = manifest
    const path = `/${name}/-/${name}-${version}.tgz`
    const body = tarball ? readFileSync(tarball) : Buffer.alloc(0)
    if (tarball) tarballs.set(path, body)
    packuments.set(name, {
      _id: name,
      name,
      'dist-tags': { latest: version },
      versions: {
        [version]: {
          ...manifest,
          _id: `${name}@${version}`,
          dist: {
            tarball: base + path,
            shasum: createHash('sha1').update(body).digest('hex'),
            integrity: 'sha512-' + createHash('sha512').update(body).digest('base64')
          }
        }
      }
    })
  }
  return {
    url: base + '/',
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()) })
  }
}

/** npm settings for a brand-new user: fresh cache, empty npmrc files, our registry only. */
export function freshNpmEnv (dir, registryUrl) {
  const home = join(dir, 'home')
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, '.npmrc'), '')
  writeFileSync(join(dir, 'global-npmrc'), '')
  return cleanEnv({
    HOME: home,
    npm_config_userconfig: join(home, '.npmrc'),
    npm_config_globalconfig: join(dir, 'global-npmrc'),
    npm_config_cache: join(dir, 'npm-cache'),
    npm_config_registry: registryUrl,
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_loglevel: 'warn',
    npm_config_prefer_online: 'true'
  })
}

export { existsSync, join }
