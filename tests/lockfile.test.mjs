// The lockfile agrees with package.json the way `npm ci` checks it, for every platform the
// project builds on (the platform packages under npm/ name them). `npm install` rewrites a lock
// that disagrees, so the test command would never notice one; `npm ci` (the release workflow,
// anyone installing in CI) refuses it instead. The check runs `npm ci --dry-run` on a copy of
// package.json and package-lock.json in a temp dir: nothing is installed, at most the registry is
// asked for metadata.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFileSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Cleanup, ROOT, NPM_DIR, runSync } from './helpers/npm.mjs'

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The (os, cpu, libc) of every platform package under npm/: the platforms the project builds on. */
function buildPlatforms () {
  const platforms = []
  for (const name of readdirSync(NPM_DIR)) {
    const file = join(NPM_DIR, name, 'package.json')
    if (!existsSync(file)) continue
    const pkg = JSON.parse(readFileSync(file, 'utf8'))
    if (!pkg.os || !pkg.cpu) continue
    platforms.push({ name, os: pkg.os[0], cpu: pkg.cpu[0], libc: pkg.libc?.[0] })
  }
  return platforms
}

/** A temp project holding copies of the root package.json and the given lock (an object). */
function project (cleanup, lock) {
  if (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).workspaces) {
    // A workspace's lock also lists its members: copy their package.json files before relying on this.
    throw new Error('the root package.json declares workspaces: copy their package.json files too')
  }
  const dir = cleanup.dir('ptyjobs-lock-')
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2) + '\n')
  return dir
}

/** `npm ci --dry-run` in `dir` as if on `platform`; returns the finished process. */
function npmCiDryRun (dir, platform) {
  const args = ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error']
  if (platform) {
    args.push(`--os=${platform.os}`, `--cpu=${platform.cpu}`)
    if (platform.libc) args.push(`--libc=${platform.libc}`)
  }
  // No engine-strict and no lockfile rewrites from a user's npmrc: the check is about the lock only.
  const env = { ...process.env, npm_config_engine_strict: 'false', npm_config_update_notifier: 'false' }
  return runSync(NPM, args, { cwd: dir, env, shell: process.platform === 'win32' })
}

const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))

test('npm ci accepts package-lock.json on every platform the project builds on', async (t) => {
  const platforms = buildPlatforms()
  assert.ok(platforms.length > 0, 'no platform packages under npm/')
  const cleanup = new Cleanup()
  t.after(() => cleanup.run())
  const dir = project(cleanup, LOCK)
  for (const platform of platforms) {
    const r = npmCiDryRun(dir, platform)
    assert.equal(r.status, 0,
      `npm ci refuses package-lock.json on ${platform.name}; regenerate it with ` +
      '`npm install --package-lock-only` (fresh npm cache, no node_modules):\n' + r.stderr)
  }
})

test('the check fails when the lock lacks an optional platform package', async (t) => {
  // What broke `npm ci` before: a lock written by an install that kept only the host's entries.
  const lock = structuredClone(LOCK)
  const removed = Object.keys(lock.packages).find((k) => lock.packages[k].optional && lock.packages[k].os)
  assert.ok(removed, 'the lock has no optional platform package to remove')
  delete lock.packages[removed]
  const cleanup = new Cleanup()
  t.after(() => cleanup.run())
  const r = npmCiDryRun(project(cleanup, lock))
  assert.notEqual(r.status, 0, `npm ci accepted a lock without ${removed}`)
  assert.match(r.stderr, /in sync/, r.stderr)
})
