/** `vmaf-stream status`: the titles in progress, the segments by state, the workers. */
import { Queue } from 'bullmq';
import { SEGMENT_QUEUE, TITLE_QUEUE } from './jobs.js';
import { connectRedis, displayUrl } from './redis-connection.js';
import { QUEUE_PREFIX } from './worker.js';

export interface QueueStatus {
  queue: string;
  segments: { waiting: number; running: number; done: number; failed: number; retrying: number };
  titles: Array<{ id: string; reference: string; renditions: string[]; frames: number; segments: number; segmentsDone: number; state: string }>;
  workers: number;
}

export async function queueStatus(url: string): Promise<QueueStatus> {
  const connection = connectRedis(url, { maxRetriesPerRequest: 2, connectTimeout: 5000 });
  const segments = new Queue(SEGMENT_QUEUE, { connection, prefix: QUEUE_PREFIX });
  const titles = new Queue(TITLE_QUEUE, { connection, prefix: QUEUE_PREFIX });
  try {
    const counts = await segments.getJobCounts('waiting', 'prioritized', 'active', 'completed', 'failed', 'delayed');
    const parents = await titles.getJobs(['waiting-children', 'failed', 'waiting'], 0, 200);
    const list: QueueStatus['titles'] = [];
    for (const job of parents) {
      const data = job.data as { titleId: string; reference: string; renditions: string[]; frames: number; segments: number };
      const deps = await job.getDependenciesCount().catch(() => ({ processed: 0, unprocessed: 0 }));
      list.push({ id: data.titleId, reference: data.reference, renditions: data.renditions, frames: data.frames, segments: data.segments, segmentsDone: deps.processed ?? 0, state: await job.getState() });
    }
    const workers = (await segments.getWorkers()).length;
    return {
      queue: displayUrl(url),
      segments: { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), running: counts.active ?? 0, done: counts.completed ?? 0, failed: counts.failed ?? 0, retrying: counts.delayed ?? 0 },
      titles: list,
      workers,
    };
  } finally {
    await Promise.allSettled([segments.close(), titles.close()]);
    connection.disconnect();
  }
}

export function statusText(s: QueueStatus): string {
  let text = `queue ${s.queue}: ${s.workers} worker${s.workers === 1 ? '' : 's'}\n`;
  text += `segments: ${s.segments.waiting} waiting, ${s.segments.running} running, ${s.segments.done} done, ${s.segments.failed} failed, ${s.segments.retrying} to retry\n`;
  text += `titles in progress: ${s.titles.length}\n`;
  for (const t of s.titles) text += `  ${t.reference} → ${t.renditions.join(', ')}: ${t.segmentsDone}/${t.segments} segments, ${t.frames} frames, ${t.state}\n`;
  return text;
}
