// The peers' side of scripts/bench: graphile-worker and pg-boss, the
// PostgreSQL job queues a user would otherwise pick, measured against the
// same PostgreSQL as jobctl in the same run. Each peer is driven through its
// own library in this process, which spares it what jobctl's figures pay:
// starting a process and connecting (a figure starts its clock once the
// peer is connected and its schema made). Each mode prints key=value lines,
// as bench/jobctl_bench does.
//
//   node peers.mjs batch  PEER DSN N         one call that adds N jobs: seconds, and the
//                                            PostgreSQL server's CPU seconds meanwhile
//                                            (server_cpu) when JOBCTL_BENCH_HELPER and
//                                            JOBCTL_BENCH_PG_PID are set (jobctl_bench
//                                            server-cpu reads it)
//   node peers.mjs single PEER DSN N         N jobs added one at a time: per_s, p50_ms
//   node peers.mjs pickup PEER DSN N GAP_MS STAMP DIR
//                                            N jobs, one at a time with GAP_MS between, each
//                                            into an idle worker whose handler runs the
//                                            program STAMP (bench/stamp.cpp) with DIR/i, as
//                                            a shell job would: p50_ms, p99_ms from the add
//                                            call to STAMP's start (the time it wrote), and
//                                            handler_p50_ms, handler_p99_ms to the handler's
//   node peers.mjs true   PEER DSN N C       N jobs each running `true`, C at a time, added
//                                            before the worker starts: seconds, rate (worker
//                                            start to the last job's completion committed)
//
// PEER is graphile-worker or pg-boss. DSN is a libpq key=value string of
// an empty database.
import { execFileSync, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import { PgBoss } from "pg-boss";

const kQueue = "bench";

// graphile-worker: jobs go in through WorkerUtils (addJobs is its batch
// insert, one statement); a runner with `concurrency` works them, woken by
// LISTEN/NOTIFY. A finished job's row is deleted.
const graphileWorker = {
  async open(dsn) {
    const utils = await makeWorkerUtils({ connectionString: dsn, logger: quiet() });
    await utils.migrate();
    return {
      addMany: (n) => utils.addJobs(Array.from({ length: n }, () => ({ identifier: kQueue, payload: {} }))),
      addOne: (payload) => utils.addJob(kQueue, payload),
      unfinished: () => count(utils, "SELECT count(*) FROM graphile_worker._private_jobs"),
      async work(concurrency, handler) {
        // The pool must hold a connection for each job in flight (its docs).
        const runner = await run({
          connectionString: dsn, concurrency, maxPoolSize: concurrency + 2, noHandleSignals: true,
          logger: quiet(), taskList: { [kQueue]: async (payload) => handler(payload) },
        });
        return () => runner.stop();
      },
      close: () => utils.release(),
    };
  },
};

// pg-boss: tuned for speed, not its defaults (a 2 s poll): its queue
// notifies, its workers listen, and a worker fetches again at once while
// its fetches come back full. insert() is its batch insert. A finished
// job's row stays, in state `completed`.
const pgBoss = {
  async open(dsn) {
    const boss = new PgBoss({ connectionString: dsn, useListenNotify: true, schedule: false, supervise: false });
    boss.on("error", (e) => console.error(`pg-boss: ${e.message}`));
    await boss.start();
    await boss.createQueue(kQueue, { notify: true });
    return {
      addMany: (n) => boss.insert(kQueue, Array.from({ length: n }, () => ({ data: {} }))),
      addOne: (payload) => boss.send(kQueue, payload),
      unfinished: () => count(boss.getDb(), "SELECT count(*) FROM pgboss.job WHERE state <> 'completed'"),
      async work(concurrency, handler) {
        // Four pollers, each fetching a quarter of the jobs in flight and
        // running them side by side: the best of 1x64, 4x16 and 16x4 here.
        const pollers = Math.min(4, concurrency);
        await boss.work(kQueue, {
          localConcurrency: pollers, batchSize: Math.ceil(concurrency / pollers),
          burstWhenBatchFull: true, pollingIntervalSeconds: 0.5,
        }, async (jobs) => Promise.all(jobs.map((j) => handler(j.data))));
        return () => boss.offWork(kQueue);
      },
      close: () => boss.stop({ graceful: false, wait: true }),
    };
  },
};

const peers = { "graphile-worker": graphileWorker, "pg-boss": pgBoss };

function quiet() {
  return new Logger(() => (level, message) => {
    if (level === "error") console.error(message);
  });
}

async function count(db, sql) {
  if (db.withPgClient) return db.withPgClient(async (c) => Number((await c.query(sql)).rows[0].count));
  return Number((await db.executeSql(sql)).rows[0].count);
}

const now = () => Number(process.hrtime.bigint()) / 1e6;  // ms

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Runs a program to its end, its output discarded.
function runProgram(program, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${program} exited ${code}`))));
  });
}

// The realtime clock in ms, to the microsecond: comparable with the time
// the stamp program wrote.
const realtimeMs = () => performance.timeOrigin + performance.now();

// The realtime (ms) a stamp file holds, once its program has ended.
async function stampedMs(file) {
  return Number(BigInt((await readFile(file, "utf8")).trim())) / 1e6;
}

// Waits, polling every 10 ms, until the store holds no unfinished job.
async function drained(store) {
  while ((await store.unfinished()) > 0) await sleep(10);
}

// The server's CPU seconds so far, or undefined when not asked for.
function serverCpu() {
  const helper = process.env.JOBCTL_BENCH_HELPER;
  if (!helper || !process.env.JOBCTL_BENCH_PG_PID) return undefined;
  const out = execFileSync(helper, ["server-cpu"], { encoding: "utf8" });
  return Number(/^server_cpu=(.*)$/m.exec(out)[1]);
}

const modes = {
  async batch(store, [n]) {
    const cpu0 = serverCpu();
    const t0 = now();
    await store.addMany(Number(n));
    const out = { seconds: (now() - t0) / 1000 };
    if (cpu0 !== undefined) out.server_cpu = serverCpu() - cpu0;
    return out;
  },

  async single(store, [n]) {
    const took = [];
    const t0 = now();
    for (let i = 0; i < Number(n); ++i) {
      const s = now();
      await store.addOne({});
      took.push(now() - s);
    }
    const seconds = (now() - t0) / 1000;
    took.sort((a, b) => a - b);
    return { per_s: Number(n) / seconds, p50_ms: percentile(took, 50) };
  },

  async pickup(store, [n, gapMs, stamp, dir]) {
    let started, ran;  // the sample's: its handler started (when), its program ran
    const stop = await store.work(1, async ({ file }) => {
      started(now());
      await runProgram(stamp, [file]);
      ran();
    });
    await sleep(1000);  // the worker has connected and listens
    const toHandler = [], toProcess = [];
    for (let i = 0; i < Number(n); ++i) {
      const file = `${dir}/${i}`;
      const began = new Promise((resolve) => { started = resolve; });
      const done = new Promise((resolve) => { ran = resolve; });
      const t0 = now(), wall0 = realtimeMs();
      await store.addOne({ file });
      toHandler.push((await began) - t0);
      await done;
      toProcess.push(await stampedMs(file) - wall0);
      await sleep(Number(gapMs));
    }
    await stop();
    toHandler.sort((a, b) => a - b);
    toProcess.sort((a, b) => a - b);
    return {
      p50_ms: percentile(toProcess, 50), p99_ms: percentile(toProcess, 99), max_ms: toProcess[toProcess.length - 1],
      handler_p50_ms: percentile(toHandler, 50), handler_p99_ms: percentile(toHandler, 99),
    };
  },

  async true(store, [n, concurrency]) {
    await store.addMany(Number(n));
    const t0 = now();
    const stop = await store.work(Number(concurrency), () => runProgram("true"));
    await drained(store);
    const seconds = (now() - t0) / 1000;
    await stop();
    return { seconds, rate: Number(n) / seconds };
  },
};

async function main() {
  const [mode, peer, dsn, ...args] = process.argv.slice(2);
  if (!modes[mode] || !peers[peer] || !dsn) {
    console.error("usage: peers.mjs batch|single|pickup|true graphile-worker|pg-boss DSN ARGS...");
    process.exit(2);
  }
  // Each peer takes a URL; the bench's DSNs are key=value strings.
  const kv = Object.fromEntries(dsn.trim().split(/\s+/).map((p) => p.split("=")));
  const url = `postgres://${kv.user}@${kv.host}:${kv.port}/${kv.dbname}`;
  const store = await peers[peer].open(url);
  const out = await modes[mode](store, args);
  await store.close();
  for (const [k, v] of Object.entries(out)) console.log(`${k}=${v.toFixed(6)}`);
}

await main();
