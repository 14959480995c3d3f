// vmaf-stream inside a Node HTTP service: a small live QC API.
//
//   POST /jobs               {"reference": PATH|URL, "distorted": [PATH|URL|{name, input}, ...],
//                             "windows"?: {"window": "2s", ...}, "alerts"?: ["vmaf<60 for 1s"], "align"?: "auto"|N}
//                            starts a ladder run; answers 202 {"id", "events": "/jobs/ID/events"}
//   GET  /jobs/:id           the job's state, and each rendition's pooled scores once it has ended
//   GET  /jobs/:id/events    server-sent events: frame, window, alert, alignment, drift, end, error
//                            (a late subscriber first gets what the job has sent so far, up to the
//                            last 1,000 events, then the rest as it happens)
//   DELETE /jobs/:id         stops the job
//
// Run: node examples/qc-service.mjs [--port N]   (listens on 127.0.0.1 only: the inputs are the
//      server's own files and URLs, so keep it off the network)
//      node examples/qc-service.mjs --self-test   starts the server on an ephemeral port, posts
//      the bundled example as a 2-rendition job, reads its events and exits 0 when frame,
//      window, alert and end events have arrived (1 otherwise).
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { scoreLadderEvents } from 'vmaf-stream';

const REPLAY = 1000;
const jobs = new Map();

function startJob(body) {
  const { reference, distorted, windows, alerts, align } = body ?? {};
  if (typeof reference !== 'string' || !Array.isArray(distorted) || distorted.length === 0) {
    throw Object.assign(new Error('expected {"reference": PATH, "distorted": [PATH, ...]}'), { status: 400 });
  }
  const id = randomUUID();
  const job = { id, state: 'running', events: [], dropped: 0, clients: new Set(), summaries: undefined, error: undefined };
  const send = (type, data) => {
    const event = { type, data };
    job.events.push(event);
    if (job.events.length > REPLAY) {
      job.events.shift();
      job.dropped++;
    }
    for (const res of job.clients) write(res, event);
  };
  const renditions = distorted.map((d) => (typeof d === 'string' ? d : { input: d.input, name: d.name }));
  const options = { windows, alerts, align, models: ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg'] };
  job.run = scoreLadderEvents(reference, renditions, options)
    .on('frame', ({ rendition, result }) => send('frame', { rendition, index: result.index, pts: result.refPts, vmaf: result.scores.vmaf, vmaf_neg: result.scores.vmaf_neg }))
    .on('window', (w) => send('window', w))
    .on('alert', (a) => send('alert', a))
    .on('alignment', ({ search: _search, ...a }) => send('alignment', a))
    .on('drift', (d) => send('drift', d))
    .on('end', (summaries) => {
      job.state = 'done';
      job.summaries = Object.fromEntries(Object.entries(summaries).map(([name, s]) => [name, { frames: s.frameCount, vmaf: s.pooled.vmaf, vmaf_neg: s.pooled.vmaf_neg }]));
      send('end', job.summaries);
      closeClients(job);
    })
    .on('error', (error) => {
      job.state = 'failed';
      job.error = { code: error.code, message: error.message };
      send('error', job.error);
      closeClients(job);
    });
  jobs.set(id, job);
  return job;
}

function write(res, { type, data }) {
  res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

function closeClients(job) {
  for (const res of job.clients) res.end();
  job.clients.clear();
}

async function readJson(req) {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 1 << 20) throw Object.assign(new Error('request too large'), { status: 413 });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw Object.assign(new Error('the body is not JSON'), { status: 400 });
  }
}

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export function createQcServer() {
  return createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://localhost');
      const [, root, id, sub] = url.pathname.split('/');
      if (root !== 'jobs') return reply(res, 404, { error: 'not found' });
      if (!id && req.method === 'POST') {
        const job = startJob(await readJson(req));
        return reply(res, 202, { id: job.id, events: `/jobs/${job.id}/events` });
      }
      const job = jobs.get(id);
      if (!job) return reply(res, 404, { error: `no job ${id}` });
      if (!sub && req.method === 'GET') return reply(res, 200, { id, state: job.state, summaries: job.summaries, error: job.error });
      if (!sub && req.method === 'DELETE') {
        job.run.stop();
        job.state = job.state === 'running' ? 'stopped' : job.state;
        closeClients(job);
        return reply(res, 200, { id, state: job.state });
      }
      if (sub === 'events' && req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        if (job.dropped) res.write(`: ${job.dropped} earlier events are no longer kept\n\n`);
        for (const event of job.events) write(res, event);
        if (job.state !== 'running') return res.end();
        job.clients.add(res);
        req.on('close', () => job.clients.delete(res));
        return;
      }
      reply(res, 405, { error: `${req.method} ${url.pathname} is not supported` });
    } catch (error) {
      reply(res, error.status ?? 500, { error: error.message });
    }
  });
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
  const server = createQcServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${server.address().port}`;
  const media = (name) => fileURLToPath(new URL(`./media/${name}`, import.meta.url));
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
    server.close();
    server.closeAllConnections();
  }
}

const argv = process.argv.slice(2);
if (argv.includes('--self-test')) {
  selfTest().catch((error) => {
    console.error(error.message);
    process.exitCode = 1;
  });
} else {
  const at = argv.indexOf('--port');
  const port = at >= 0 ? Number(argv[at + 1]) : 8080;
  const server = createQcServer().listen(port, '127.0.0.1', () => console.log(`vmaf-stream QC service on http://127.0.0.1:${server.address().port}`));
}
