// vmaf-stream inside a Node HTTP service: a small live QC API, safe to expose.
//
//   POST /jobs               {"reference": PATH|URL, "distorted": [PATH|URL|{name, input}, ...],
//                             "windows"?: {"window": "2s", ...}, "alerts"?: ["vmaf<60 for 1s"], "align"?: "auto"|N}
//                            starts a ladder run (or queues it); answers 202 {"id", "events": "/jobs/ID/events"},
//                            403 for an input outside the allowed roots and protocols, 413 for a body
//                            over the limit, 429 when running and queued jobs are at their bound
//   GET  /jobs/:id           the job's state, and each rendition's pooled scores once it has ended
//   GET  /jobs/:id/events    server-sent events: frame, window, alert, alignment, drift, end, error
//                            (a late subscriber first gets what the job has sent so far, up to the
//                            last 1,000 events, then the rest as it happens; 429 past the clients bound)
//   DELETE /jobs/:id         stops the job
//
// What makes it safe to put in front of other people (each a createQcServer option):
// - inputs: paths under `roots` only (resolved, symlinks followed: no ../ or link out of them),
//   URLs of `protocols` only (default none: files alone), never ffmpeg's protocol syntax
//   (concat:, subfile:); the run itself gets vmaf-stream's `protocols` option, which is also
//   ffmpeg's protocol whitelist, so a playlist cannot reach past them either;
// - a bearer `token` on every request (required to listen on anything but loopback);
// - `maxBodyBytes` per request, `maxRenditions` per job, `maxFrames` scored per job,
//   `stallTimeoutMs` for inputs that stop sending, `maxJobMs` per job;
// - `maxRunning` jobs at once, `maxQueued` waiting (429 beyond), `maxClientsPerJob` event
//   streams per job, finished jobs forgotten after `forgetAfterMs` (and past `maxFinished`).
//
// Run: node examples/qc-service.mjs [--port N] [--host H] [--root DIR ...] [--protocol https ...]
//      (roots default to the current folder; a --host other than loopback needs QC_TOKEN set)
//      node examples/qc-service.mjs --self-test   starts the server on an ephemeral port, posts
//      the bundled example as a 2-rendition job, reads its events and exits 0 when frame,
//      window, alert and end events have arrived (1 otherwise).
import { createServer } from 'node:http';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { scoreLadderEvents } from 'vmaf-stream';

const REPLAY = 1000;

export const DEFAULT_LIMITS = {
  maxBodyBytes: 64 * 1024,
  maxRenditions: 8,
  maxFrames: 1_000_000,
  maxRunning: 2,
  maxQueued: 16,
  maxClientsPerJob: 16,
  forgetAfterMs: 10 * 60_000,
  maxFinished: 200,
  stallTimeoutMs: 30_000,
  maxJobMs: 6 * 3600_000,
};

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Whether a host name or address is the loopback interface. */
export function isLoopback(host) {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * The input as the run may open it, or HttpError 403: a URL of an allowed protocol, or a
 * path that, resolved with symlinks followed, lies inside one of the roots (relative paths
 * are taken from the first root).
 */
async function checkedInput(input, { roots, protocols }) {
  if (typeof input !== 'string' || input.length === 0 || input.length > 4096 || input.includes('\0')) {
    throw new HttpError(400, 'an input is a non-empty string (a path or URL)');
  }
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(input)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    if (protocols.includes(scheme) && /^[a-z][a-z0-9+.-]+:\/\//i.test(input)) return input;
    throw new HttpError(403, `${input}: ${scheme}: inputs are not allowed here`);
  }
  if (input === '-') throw new HttpError(403, 'standard input is not an input here');
  const full = resolve(roots[0], input);
  let real;
  try {
    real = await realpath(full);
  } catch {
    throw new HttpError(403, `${input}: not found under the allowed folders`);
  }
  const inside = roots.some((root) => {
    const rel = relative(root, real);
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
  });
  if (!inside) throw new HttpError(403, `${input}: not found under the allowed folders`);
  return real;
}

export async function createQcServer(options = {}) {
  const limits = { ...DEFAULT_LIMITS, ...options };
  const roots = await Promise.all((options.roots ?? [process.cwd()]).map((root) => realpath(root)));
  const protocols = (options.protocols ?? []).map((p) => p.toLowerCase().replace(/:(\/\/)?$/, ''));
  const token = options.token;
  const jobs = new Map();
  const waiting = [];
  let running = 0;

  async function parseJob(body) {
    const { reference, distorted, windows, alerts, align } = body ?? {};
    if (typeof reference !== 'string' || !Array.isArray(distorted) || distorted.length === 0) {
      throw new HttpError(400, 'expected {"reference": PATH, "distorted": [PATH, ...]}');
    }
    if (distorted.length > limits.maxRenditions) throw new HttpError(413, `at most ${limits.maxRenditions} renditions a job`);
    if (alerts !== undefined && (!Array.isArray(alerts) || alerts.length > 32 || alerts.some((a) => typeof a !== 'string'))) {
      throw new HttpError(400, 'alerts: at most 32 strings');
    }
    const allow = { roots, protocols };
    const ref = await checkedInput(reference, allow);
    const renditions = [];
    for (const d of distorted) {
      if (typeof d === 'string') renditions.push(await checkedInput(d, allow));
      else if (d && typeof d === 'object' && typeof d.name === 'string' && d.name.length <= 200) renditions.push({ name: d.name, input: await checkedInput(d.input, allow) });
      else throw new HttpError(400, 'a distorted entry is a PATH or {"name", "input"}');
    }
    return { ref, renditions, windows, alerts, align };
  }

  function startJob(spec) {
    const id = randomUUID();
    const job = { id, state: 'queued', events: [], dropped: 0, clients: new Set(), summaries: undefined, error: undefined, run: undefined, spec, timer: undefined };
    jobs.set(id, job);
    if (running < limits.maxRunning) run(job);
    else waiting.push(job);
    return job;
  }

  function send(job, type, data) {
    const event = { type, data };
    job.events.push(event);
    if (job.events.length > REPLAY) {
      job.events.shift();
      job.dropped++;
    }
    for (const res of job.clients) write(res, event);
  }

  function run(job) {
    running++;
    job.state = 'running';
    const { ref, renditions, windows, alerts, align } = job.spec;
    const runOptions = {
      windows,
      alerts,
      align,
      models: ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg'],
      // vmaf-stream's own rule and ffmpeg's whitelist: what the checks above allowed, nothing nested beyond it.
      protocols: ['file', ...protocols],
      stallTimeoutMs: limits.stallTimeoutMs,
      frameCnt: limits.maxFrames,
      threads: options.threads,
    };
    try {
      job.run = scoreLadderEvents(ref, renditions, runOptions)
        .on('frame', ({ rendition, result }) => send(job, 'frame', { rendition, index: result.index, pts: result.refPts, vmaf: result.scores.vmaf, vmaf_neg: result.scores.vmaf_neg }))
        .on('window', (w) => send(job, 'window', w))
        .on('alert', (a) => send(job, 'alert', a))
        .on('alignment', ({ search: _search, ...a }) => send(job, 'alignment', a))
        .on('drift', (d) => send(job, 'drift', d))
        .on('end', (summaries) => {
          job.summaries = Object.fromEntries(Object.entries(summaries).map(([name, s]) => [name, { frames: s.frameCount, vmaf: s.pooled.vmaf, vmaf_neg: s.pooled.vmaf_neg }]));
          send(job, 'end', job.summaries);
          finish(job, 'done');
        })
        .on('error', (error) => {
          job.error = { code: error.code, message: error.message };
          send(job, 'error', job.error);
          finish(job, 'failed');
        });
    } catch (error) {
      job.error = { code: error.code, message: error.message };
      send(job, 'error', job.error);
      finish(job, 'failed');
      return;
    }
    job.timer = setTimeout(() => {
      job.run.stop();
      job.error = { code: 'E_TIMEOUT', message: `the job ran past ${limits.maxJobMs} ms` };
      send(job, 'error', job.error);
      finish(job, 'failed');
    }, limits.maxJobMs);
    job.timer.unref();
  }

  /** A job's end (once): its clients closed, its slot handed on, forgotten later. */
  function finish(job, state) {
    if (job.state !== 'running' && job.state !== 'queued') return;
    const wasRunning = job.state === 'running';
    job.state = state;
    clearTimeout(job.timer);
    job.spec = undefined;
    for (const res of job.clients) res.end();
    job.clients.clear();
    setTimeout(() => jobs.delete(job.id), limits.forgetAfterMs).unref();
    const finished = [...jobs.values()].filter((j) => j.state !== 'running' && j.state !== 'queued');
    for (const old of finished.slice(0, Math.max(0, finished.length - limits.maxFinished))) jobs.delete(old.id);
    if (wasRunning) {
      running--;
      const next = waiting.shift();
      if (next) run(next);
    }
  }

  function authorized(req) {
    if (token === undefined) return true;
    const given = Buffer.from(req.headers.authorization ?? '');
    const wanted = Buffer.from(`Bearer ${token}`);
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  }

  async function readJson(req) {
    const declared = Number(req.headers['content-length']);
    if (declared > limits.maxBodyBytes) throw new HttpError(413, `the body is over ${limits.maxBodyBytes} bytes`);
    const chunks = [];
    let size = 0;
    for await (const chunk of req) {
      size += chunk.length;
      if (size > limits.maxBodyBytes) throw new HttpError(413, `the body is over ${limits.maxBodyBytes} bytes`);
      chunks.push(chunk);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new HttpError(400, 'the body is not JSON');
    }
  }

  const server = createServer(async (req, res) => {
    try {
      if (!authorized(req)) {
        res.setHeader('www-authenticate', 'Bearer');
        throw new HttpError(401, 'a bearer token is required');
      }
      const url = new URL(req.url, 'http://localhost');
      const [, root, id, sub, extra] = url.pathname.split('/');
      if (root !== 'jobs' || extra !== undefined) throw new HttpError(404, 'not found');
      if (!id && req.method === 'POST') {
        // Checked before the body is read: a full service answers at once.
        if (running + waiting.length >= limits.maxRunning + limits.maxQueued) throw new HttpError(429, 'too many jobs: try again later');
        const spec = await parseJob(await readJson(req));
        if (running + waiting.length >= limits.maxRunning + limits.maxQueued) throw new HttpError(429, 'too many jobs: try again later');
        const job = startJob(spec);
        return reply(res, 202, { id: job.id, events: `/jobs/${job.id}/events` });
      }
      const job = jobs.get(id);
      if (!job) throw new HttpError(404, 'no such job');
      if (!sub && req.method === 'GET') return reply(res, 200, { id, state: job.state, summaries: job.summaries, error: job.error });
      if (!sub && req.method === 'DELETE') {
        if (job.state === 'queued') waiting.splice(waiting.indexOf(job), 1);
        job.run?.stop();
        finish(job, 'stopped');
        return reply(res, 200, { id, state: job.state });
      }
      if (sub === 'events' && req.method === 'GET') {
        const live = job.state === 'running' || job.state === 'queued';
        if (live && job.clients.size >= limits.maxClientsPerJob) throw new HttpError(429, `at most ${limits.maxClientsPerJob} event streams a job`);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        res.flushHeaders(); // a job that has sent nothing yet: the client still gets its answer now
        if (job.dropped) res.write(`: ${job.dropped} earlier events are no longer kept\n\n`);
        for (const event of job.events) write(res, event);
        if (!live) return res.end();
        job.clients.add(res);
        req.on('close', () => job.clients.delete(res));
        return;
      }
      throw new HttpError(405, `${req.method} ${url.pathname} is not supported`);
    } catch (error) {
      if (!res.headersSent) reply(res, error.status ?? 500, { error: error.status ? error.message : 'internal error' });
      else res.end();
    }
  });
  // A client that sends its request slowly, or never, is dropped.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const listen = server.listen.bind(server);
  /** listen(port, host): refuses a host other than loopback without a token. */
  server.listen = (port, host = '127.0.0.1', ...rest) => {
    if (!isLoopback(host) && token === undefined) throw new Error(`listening on ${host} needs a bearer token (the token option, QC_TOKEN)`);
    return listen(port, host, ...rest);
  };
  /** What the service holds now: for monitoring and the tests. */
  server.stats = () => ({ jobs: jobs.size, running, queued: waiting.length, clients: [...jobs.values()].reduce((n, j) => n + j.clients.size, 0) });
  /** Stops every job and closes the server. */
  server.shutdown = async () => {
    for (const job of [...jobs.values()]) {
      job.run?.stop();
      finish(job, 'stopped');
    }
    waiting.length = 0;
    jobs.clear();
    server.close();
    server.closeAllConnections();
  };
  return server;
}

function write(res, { type, data }) {
  res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Reads server-sent events from a response body: yields { type, data }. */
async function* readEvents(body) {
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

async function selfTest() {
  const media = (name) => fileURLToPath(new URL(`./media/${name}`, import.meta.url));
  const server = (await createQcServer({ roots: [media('.')] })).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const posted = await fetch(`${base}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        reference: media('ref.y4m'),
        distorted: [{ name: 'dis', input: media('dis.y4m') }, { name: 'same', input: media('ref.y4m') }],
        windows: { window: '4f' },
        // A threshold the example's distorted clip stays under, so that the self-test sees an alert.
        alerts: ['dis:vmaf<99 for 2f'],
      }),
    });
    if (posted.status !== 202) throw new Error(`POST /jobs: ${posted.status} ${await posted.text()}`);
    const { id, events } = await posted.json();
    const seen = {};
    const response = await fetch(`${base}${events}`);
    for await (const { type, data } of readEvents(response.body)) {
      seen[type] = (seen[type] ?? 0) + 1;
      if (type === 'alert') console.log(`alert: ${data.rendition} ${data.spec} ${data.state} at frame ${data.index}`);
      if (type === 'end') for (const [name, s] of Object.entries(data)) console.log(`${name}: ${s.frames} frames, VMAF ${s.vmaf.mean.toFixed(3)}, VMAF NEG ${s.vmaf_neg.mean.toFixed(3)}`);
      if (type === 'error') throw new Error(`job ${id} failed: ${data.message}`);
    }
    const state = await (await fetch(`${base}/jobs/${id}`)).json();
    console.log(`job ${id}: ${state.state}; events: ${JSON.stringify(seen)}`);
    const missing = ['frame', 'window', 'alert', 'end'].filter((type) => !seen[type]);
    if (missing.length > 0 || state.state !== 'done') throw new Error(`self-test: no ${missing.join(', ')} event`);
    console.log('self-test passed');
  } finally {
    await server.shutdown();
  }
}

/** The command line's value(s) of an option. */
function optionValues(argv, name) {
  return argv.flatMap((a, i) => (a === name && argv[i + 1] !== undefined ? [argv[i + 1]] : []));
}

// Run as a program (not imported, as the tests do).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  if (argv.includes('--self-test')) {
    selfTest().catch((error) => {
      console.error(error.message);
      process.exitCode = 1;
    });
  } else {
    const port = Number(optionValues(argv, '--port')[0] ?? 8080);
    const host = optionValues(argv, '--host')[0] ?? '127.0.0.1';
    const roots = optionValues(argv, '--root');
    const server = await createQcServer({
      ...(roots.length > 0 ? { roots } : {}),
      protocols: optionValues(argv, '--protocol'),
      ...(process.env.QC_TOKEN ? { token: process.env.QC_TOKEN } : {}),
    });
    server.listen(port, host, () => console.log(`vmaf-stream QC service on http://${host}:${server.address().port}`));
  }
}
