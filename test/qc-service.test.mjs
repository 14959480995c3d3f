// examples/qc-service.mjs as people will deploy it: what it refuses (inputs outside its roots
// and protocols, path traversal, symlinks out, ffmpeg protocol syntax, large bodies, missing
// tokens), its bounds (running and queued jobs, event streams per job: 429), and a load test
// on 127.0.0.1: 50 concurrent jobs and 200 event-stream clients, every job ends, every client
// sees the end, finished jobs are forgotten, memory returns near its baseline, no child left.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, symlinkSync, copyFileSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createQcServer } from '../examples/qc-service.mjs';
import { childrenOf, commandLine } from './helpers/processes.mjs';

const MEDIA = fileURLToPath(new URL('../examples/media/', import.meta.url));

/** Server-sent events of a response body: yields { type, data }. */
async function* events(body) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const type = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (type && data) yield { type, data: JSON.parse(data) };
    }
  }
}

async function started(options) {
  const server = (await createQcServer(options)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

const post = (base, body, headers = {}) =>
  fetch(`${base}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('examples/qc-service.mjs: safe to expose', function () {
  this.timeout(120000);
  let dir;
  let root;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vmaf-qc-service-'));
    root = join(dir, 'root');
    mkdirSync(root);
    copyFileSync(join(MEDIA, 'ref.y4m'), join(root, 'ref.y4m'));
    copyFileSync(join(MEDIA, 'dis.y4m'), join(root, 'dis.y4m'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses inputs outside its roots and protocols (403), bad bodies (400, 413), unknown jobs (404)', async () => {
    copyFileSync(join(MEDIA, 'ref.y4m'), join(dir, 'outside.y4m'));
    symlinkSync(join(dir, 'outside.y4m'), join(root, 'link.y4m'));
    const { server, base } = await started({ roots: [root], maxRenditions: 2 });
    try {
      const refused = ['../outside.y4m', join(dir, 'outside.y4m'), 'link.y4m', '/etc/passwd', 'nothing.y4m',
        `concat:${join(root, 'ref.y4m')}|${join(root, 'ref.y4m')}`, 'file:/etc/passwd', 'http://127.0.0.1:9/a.ts', '-'];
      for (const input of refused) {
        const r = await post(base, { reference: 'ref.y4m', distorted: [input] });
        assert.equal(r.status, 403, input);
        const { error } = await r.json();
        assert.ok(!error.includes(dir) || error.startsWith(input), `${input}: the message reveals no path of the server's: ${error}`);
      }
      assert.equal((await post(base, '{not json')).status, 400);
      assert.equal((await post(base, { reference: 'ref.y4m' })).status, 400);
      assert.equal((await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m', 'dis.y4m', 'dis.y4m'] })).status, 413);
      assert.equal((await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'], pad: 'x'.repeat(70000) })).status, 413);
      assert.equal((await fetch(`${base}/jobs/nope`)).status, 404);
      assert.equal((await fetch(`${base}/elsewhere`)).status, 404);
      assert.deepEqual(server.stats(), { jobs: 0, running: 0, queued: 0, clients: 0 });
    } finally {
      await server.shutdown();
    }
  });

  it('a token: every request needs it; without one it listens on loopback only', async () => {
    await assert.rejects(async () => (await createQcServer({ roots: [root] })).listen(0, '0.0.0.0'), /needs a bearer token/);
    const { server, base } = await started({ roots: [root], token: 's3cret' });
    try {
      assert.equal((await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'] })).status, 401);
      assert.equal((await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'] }, { authorization: 'Bearer wrong!' })).status, 401);
      const ok = await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'] }, { authorization: 'Bearer s3cret' });
      assert.equal(ok.status, 202);
      const { id } = await ok.json();
      const stream = await fetch(`${base}/jobs/${id}/events`, { headers: { authorization: 'Bearer s3cret' } });
      const seen = [];
      for await (const e of events(stream.body)) seen.push(e.type);
      assert.equal(seen.at(-1), 'end');
    } finally {
      await server.shutdown();
    }
  });

  it('bounds: running and queued jobs (429 beyond), event streams per job (429 beyond); a stopped job hands its slot on', async () => {
    // A job held by its input: a named pipe nobody writes yet.
    const fifo = join(root, 'live.y4m');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const { server, base } = await started({ roots: [root], maxRunning: 1, maxQueued: 1, maxClientsPerJob: 2, threads: 1 });
    let writer;
    try {
      const a = await (await post(base, { reference: 'live.y4m', distorted: ['dis.y4m'] })).json();
      const b = await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'] });
      assert.equal(b.status, 202);
      const c = await post(base, { reference: 'ref.y4m', distorted: ['dis.y4m'] });
      assert.equal(c.status, 429);
      assert.deepEqual(server.stats(), { jobs: 2, running: 1, queued: 1, clients: 0 });
      const clients = [];
      for (let i = 0; i < 2; i++) {
        const r = await fetch(`${base}/jobs/${a.id}/events`);
        assert.equal(r.status, 200);
        clients.push(r);
      }
      assert.equal((await fetch(`${base}/jobs/${a.id}/events`)).status, 429);
      assert.equal((await (await fetch(`${base}/jobs/${a.id}`, { method: 'DELETE' })).json()).state, 'stopped');
      // Its clients end; the queued job runs and ends.
      for (const r of clients) for await (const _ of events(r.body));
      const { id: bId } = await b.json();
      const seen = [];
      for await (const e of events((await fetch(`${base}/jobs/${bId}/events`)).body)) seen.push(e.type);
      assert.equal(seen.at(-1), 'end');
      assert.equal((await (await fetch(`${base}/jobs/${bId}`)).json()).state, 'done');
    } finally {
      // Lets the stopped reader's open() of the pipe return.
      try {
        writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        closeSync(writer);
      } catch {
        // no reader waits on it
      }
      await server.shutdown();
    }
  });

  it('load: 50 concurrent jobs, 200 event-stream clients; all end, jobs forgotten, memory back near its baseline, no child left', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc');
    const JOBS = 50;
    const CLIENTS_PER_JOB = 4;
    const { server, base } = await started({ roots: [root], maxRunning: 4, maxQueued: JOBS - 4, maxClientsPerJob: CLIENTS_PER_JOB, maxFrames: 6, forgetAfterMs: 5000, threads: 1 });
    try {
      gc();
      const baseline = process.memoryUsage().heapUsed;
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
      const posted = await Promise.all(Array.from({ length: JOBS }, (_, i) =>
        post(base, { reference: 'ref.y4m', distorted: [{ name: `r${i}`, input: 'dis.y4m' }], windows: { window: '2f' }, alerts: ['vmaf<99 for 2f'] })));
      assert.deepEqual(posted.map((r) => r.status), Array(JOBS).fill(202));
      const ids = await Promise.all(posted.map(async (r) => (await r.json()).id));
      const clients = ids.flatMap((id) => Array.from({ length: CLIENTS_PER_JOB }, async () => {
        const r = await fetch(`${base}/jobs/${id}/events`);
        assert.equal(r.status, 200);
        const seen = { frame: 0, end: 0, error: 0 };
        for await (const e of events(r.body)) seen[e.type] = (seen[e.type] ?? 0) + 1;
        return seen;
      }));
      const seen = await Promise.all(clients);
      clearInterval(sampler);
      assert.equal(seen.length, JOBS * CLIENTS_PER_JOB);
      for (const s of seen) {
        assert.equal(s.end, 1, JSON.stringify(s));
        assert.equal(s.error, 0, JSON.stringify(s));
        assert.equal(s.frame, 6, 'maxFrames bounds each job');
      }
      // Finished jobs are forgotten (forgetAfterMs): poll, bounded by the test's timeout.
      while (server.stats().jobs > 0) await sleep(50);
      assert.deepEqual(server.stats(), { jobs: 0, running: 0, queued: 0, clients: 0 });
      const children = childrenOf(process.pid).map(commandLine).filter((c) => c.includes('ffmpeg'));
      assert.deepEqual(children, []);
      gc();
      const after = process.memoryUsage().heapUsed;
      console.log(`      load: ${JOBS} jobs, ${seen.length} clients; heap ${(baseline / 2 ** 20).toFixed(1)} MiB before, ${(after / 2 ** 20).toFixed(1)} MiB after; peak rss ${(peak / 2 ** 20).toFixed(1)} MiB`);
      assert.ok(after - baseline < 32 * 2 ** 20, `heap grew by ${((after - baseline) / 2 ** 20).toFixed(1)} MiB`);
    } finally {
      await server.shutdown();
    }
  });
});
