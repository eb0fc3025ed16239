#!/usr/bin/env node
// Builds the Windows server, target/x86_64-pc-windows-gnu/release/ptyjobs.exe, with mingw
// (linker set in .cargo/config.toml); with --addon also the Node addon (ptyjobs_node.dll,
// to be renamed ptyjobs.win32-x64-gnu.node or as the package wants).
//
// The addon: napi-rs resolves Node's functions at run time on Windows (napi-sys's
// dyn-symbols), yet napi-build insists on a libnode.dll to link against for the gnu target.
// An empty import library (no symbols, nothing is imported from it) made with mingw's dlltool
// satisfies it; it lives in target/ and is never shipped.
//
// Without the mingw toolchain or the Rust target this says why and exits 0: the Windows test
// (tests/windows.test.mjs) then fails or skips with its own reason.
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, copyFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const TARGET = 'x86_64-pc-windows-gnu'
const addon = process.argv.includes('--addon')

function run (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts })
  if (r.error) throw r.error
  if (r.status !== 0) process.exit(r.status ?? 1)
}

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
if (!has('x86_64-w64-mingw32-gcc')) {
  console.error('build-windows: x86_64-w64-mingw32-gcc not found (apt-get install gcc-mingw-w64-x86-64); not building the Windows server')
  process.exit(0)
}
const targets = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' })
if (targets.status === 0 && !targets.stdout.split('\n').includes(TARGET)) {
  console.error(`build-windows: the Rust target ${TARGET} is not installed (rustup target add ${TARGET}); not building the Windows server`)
  process.exit(0)
}

run('cargo', ['build', '--release', '--target', TARGET, '-p', 'ptyjobs-mcp'])

if (addon) {
  const lib = join(ROOT, 'target', TARGET, 'libnode')
  mkdirSync(lib, { recursive: true })
  writeFileSync(join(lib, 'node.def'), 'LIBRARY node.exe\nEXPORTS\n')
  run('x86_64-w64-mingw32-dlltool', ['-d', join(lib, 'node.def'), '-l', join(lib, 'libnode.dll.a')])
  // napi-build checks that this file exists; the linker takes libnode.dll.a first.
  copyFileSync(join(lib, 'libnode.dll.a'), join(lib, 'libnode.dll'))
  run('cargo', ['build', '--release', '--target', TARGET, '-p', 'ptyjobs-node'], {
    env: { ...process.env, LIBNODE_PATH: lib }
  })
}
