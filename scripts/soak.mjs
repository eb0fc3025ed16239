#!/usr/bin/env node
// Soak test of the ptyjobs server (not part of `npm test`; run `npm run soak`, a few minutes):
// 200 concurrent chatty jobs, random kills, a server SIGKILL and a restart on the same state
// directory. Afterwards it checks: no process of any job left, the server's fds and RSS back
// near their baseline, every record on disk parseable, no line lost from finished jobs.
//
// Usage: node scripts/soak.mjs [path/to/ptyjobs]   (default: target/debug/ptyjobs;
// PTYJOBS_BINARY overrides). Exit code 0 when every check holds; a JSON summary on stdout.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const BIN = process.env.PTYJOBS_BINARY || process.argv[2] || 'target/debug/ptyjobs';
const JOBS = Number(process.env.SOAK_JOBS || 200);
const LINES = 300; // lines printed by each finite job
// Finished jobs stay listed with their transcript and final screen in memory (bounded by
// --transcript-bytes and the finished-jobs cap): RSS may stay this much above its baseline.
const RSS_SLACK_KIB = 100 * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a truthy value or `ms` pass (then throws naming `what`). */
async function waitUntil(what, ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** A ptyjobs server spoken to in newline-delimited JSON-RPC over its stdio. */
class Server {
  constructor(stateDir) {
    this.child = spawn(BIN, ['--state-dir', stateDir, '--max-jobs', String(JOBS + 64)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.pid = this.child.pid;
    this.next = 1;
    this.pending = new Map();
    this.exited = new Promise((r) => this.child.on('exit', (code, sig) => r({ code, sig })));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line);
      const p = this.pending.get(msg.id);
      if (p) {
        this.pending.delete(msg.id);
        p(msg);
      }
    });
  }

  request(method, params) {
    const id = this.next++;
    const answer = new Promise((r) => this.pending.set(id, r));
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    return answer;
  }

  async init() {
    await this.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'soak', version: '0' },
    });
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    return this;
  }

  /** Calls a tool; returns its structured result, or throws with its error text. */
  async tool(name, args) {
    const msg = await this.request('tools/call', { name, arguments: args });
    if (msg.error) throw new Error(`${name}: ${JSON.stringify(msg.error)}`);
    if (msg.result.isError) throw new Error(`${name}: ${msg.result.content?.[0]?.text}`);
    return msg.result.structuredContent;
  }

  async close() {
    this.child.stdin.end();
    return this.exited;
  }
}

/** Live (non-zombie) processes whose environment carries one of `ids` as PTYJOBS_JOB_ID. */
function jobProcesses(ids) {
  const wanted = new Set([...ids].map((id) => `PTYJOBS_JOB_ID=${id}`));
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') continue;
      const env = fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      if (env.some((e) => wanted.has(e))) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

const fds = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;
const rssKiB = (pid) =>
  Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

async function main() {
  const t0 = Date.now();
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'ptyjobs-soak-'));
  const summary = { jobs: JOBS, state };
  const allIds = new Set();

  // Phase 1: 200 concurrent chatty jobs, random kills.
  let a = await new Server(state).init();
  await a.tool('list_jobs', {});
  const base = { fds: fds(a.pid), rssKiB: rssKiB(a.pid) };
  summary.baseline = base;
  const finite = [];
  const endless = [];
  const started = await Promise.all(
    Array.from({ length: JOBS }, (_, i) => {
      const chatty = i % 4 !== 0;
      const command = chatty
        ? `i=1; while [ $i -le ${LINES} ]; do echo "job ${i} line $i"; i=$((i+1)); ` +
          `if [ $((i % 50)) -eq 0 ]; then sleep 0.0$((i % 7)); fi; done`
        : `i=0; while :; do echo "tick ${i} $i"; i=$((i+1)); sleep 0.02; done`;
      return a.tool('execute_command', { command, name: `soak-${i}` }).then((r) => {
        allIds.add(r.job_id);
        (chatty ? finite : endless).push({ id: r.job_id, n: i });
      });
    }),
  );
  summary.started = started.length;
  // Random kills: every endless job, plus a random tenth of the finite ones, some with KILL.
  const victims = [...endless, ...finite.filter(() => Math.random() < 0.1)];
  const kills = await Promise.all(
    victims.map((j, k) =>
      a.tool('kill_job', { job_id: j.id, signal: k % 3 === 0 ? 'KILL' : 'TERM', grace_ms: 500 }),
    ),
  );
  summary.killed = kills.filter((k) => k.status === 'killed').length;
  summary.survivors = kills.flatMap((k) => k.survivors || []);
  const killedIds = new Set(victims.map((j) => j.id));
  // Every finite job ends; those not killed must have every line.
  const statuses = new Map();
  for (const j of finite) {
    const st = await waitUntil(`job ${j.id} to end`, 120_000, async () => {
      const s = await a.tool('get_job_status', { job_id: j.id });
      return s.status !== 'running' && s;
    });
    statuses.set(j.id, st);
  }
  let lost = 0;
  const checkLines = async (srv, j) => {
    const want = Array.from({ length: LINES }, (_, k) => `job ${j.n} line ${k + 1}`).join('\n');
    const out = await srv.tool('get_job_output', { job_id: j.id, offset: 0, limit: LINES + 10 });
    if (out.output !== want) {
      lost++;
      console.error(`lines lost in job ${j.id}: got ${out.output.split('\n').length} lines`);
    }
  };
  const completed = finite.filter((j) => !killedIds.has(j.id));
  for (const j of completed) {
    const st = statuses.get(j.id);
    if (st.status !== 'completed') throw new Error(`job ${j.id} ended ${JSON.stringify(st)}`);
    await checkLines(a, j);
  }
  summary.completed = completed.length;
  await waitUntil('no job process left after phase 1', 20_000, () => jobProcesses(allIds).length === 0);
  // Back near the baseline: no fd kept per finished job, memory bounded.
  const after = await waitUntil('fds back to the baseline', 20_000, () => {
    const now = { fds: fds(a.pid), rssKiB: rssKiB(a.pid) };
    return now.fds <= base.fds + 2 && now;
  });
  summary.afterPhase1 = after;

  // Phase 2: more jobs, some ignoring the hang-up, then the server is SIGKILLed mid-flight.
  const crashIds = [];
  for (let i = 0; i < 40; i++) {
    const hupProof = i % 8 === 0 ? "trap '' HUP; " : '';
    const r = await a.tool('execute_command', {
      command: `${hupProof}i=0; while :; do echo "crash ${i} $i"; i=$((i+1)); sleep 0.01; done`,
    });
    crashIds.push(r.job_id);
    allIds.add(r.job_id);
  }
  await sleep(300); // let them chat a little before the crash (not a synchronisation)
  a.child.kill('SIGKILL');
  await a.exited;
  const afterCrash = jobProcesses(crashIds).length;
  summary.leftByTheCrash = afterCrash; // the HUP-proof ones outlive their server

  // Phase 3: a new server on the same directory takes the records over.
  const b = await new Server(state).init();
  await waitUntil('the takeover to end every job', 30_000, () => jobProcesses(allIds).length === 0);
  for (const id of crashIds) {
    const st = await waitUntil(`record of ${id} taken over`, 30_000, async () => {
      const s = await b.tool('get_job_status', { job_id: id });
      return s.status !== 'running' && s;
    });
    if (st.status !== 'killed') throw new Error(`crashed job ${id}: ${JSON.stringify(st)}`);
  }
  // Every record parseable.
  let records = 0;
  for (const dir of fs.readdirSync(path.join(state, 'jobs'))) {
    const meta = path.join(state, 'jobs', dir, 'meta.json');
    if (!fs.existsSync(meta)) continue;
    JSON.parse(fs.readFileSync(meta, 'utf8'));
    records++;
  }
  summary.records = records;
  // Finished jobs' lines, now from disk.
  for (const j of completed.filter((_, k) => k % 5 === 0)) await checkLines(b, j);
  summary.linesLost = lost;
  const closed = await b.close();
  summary.secondServerExit = closed;
  summary.processesLeft = jobProcesses(allIds).length;
  summary.seconds = (Date.now() - t0) / 1000;
  fs.rmSync(state, { recursive: true, force: true });
  const ok =
    lost === 0 &&
    summary.processesLeft === 0 &&
    summary.survivors.length === 0 &&
    records >= JOBS + crashIds.length &&
    after.rssKiB <= base.rssKiB + RSS_SLACK_KIB &&
    closed.code === 0;
  summary.ok = ok;
  console.log(JSON.stringify(summary, null, 2));
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
