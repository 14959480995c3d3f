/**
 * A worker's backends, kept from one segment to the next. Opening a backend costs little on
 * the cpu, but on a gpu it opens the device and builds the pipelines of each frame size: a
 * worker scoring a title's segments one after the other would pay that per segment. So a
 * backend that finished a segment waits here, and the next segment of the same plan and
 * frame size takes it (each extractMany is a stream of its own, so a reused backend scores
 * exactly as a fresh one).
 *
 * The run plan (models loaded, features planned) is kept the same way, for the latest plan
 * only: every segment of a title would otherwise read and parse its models again.
 *
 * Bounded: a backend is used by one segment at a time (a worker of concurrency N holds at
 * most N); one that waits `idleMs` unused is closed; a segment of another plan or size
 * closes every waiting backend of the old one; one whose segment failed is closed, not kept
 * (a lost device must not serve the next segment).
 */
import type { FeatureBackend } from '../kernels/backend.js';
import type { SegmentJobData } from './jobs.js';

/** Default time a backend waits for another segment before it is closed. */
export const DEFAULT_BACKEND_IDLE_MS = 30_000;

export interface BackendCacheOptions {
  idleMs?: number;
  /** Says when a backend is opened, reused and closed (the worker's log). */
  onEvent?: (text: string) => void;
}

interface Waiting {
  key: string;
  backend: FeatureBackend;
  timer: NodeJS.Timeout;
}

/** What decides a segment's run plan: its models and features. */
export function planKey(title: SegmentJobData['title']): string {
  return JSON.stringify({ models: title.models, features: title.features, noPrediction: title.noPrediction });
}

/** What decides the backend a segment needs: its run plan (models, features) and its frame size. */
export function backendKey(title: SegmentJobData['title']): string {
  const { width, height } = title.reference.index;
  return JSON.stringify({ models: title.models, features: title.features, noPrediction: title.noPrediction, width, height, raw: title.raw ?? null });
}

export class BackendCache {
  private readonly waiting: Waiting[] = [];
  private readonly idleMs: number;
  private closed = false;
  /** The latest run plan, by planKey (a failed one is not kept). */
  private latestPlan: { key: string; plan: Promise<unknown> } | undefined;
  /** Backends opened so far (a worker's log says so; the tests count them). */
  opened = 0;

  constructor(private readonly options: BackendCacheOptions = {}) {
    this.idleMs = options.idleMs ?? DEFAULT_BACKEND_IDLE_MS;
  }

  /** A backend for `key`: a waiting one, or a new one from `open`. Give it back with release(). */
  async acquire(key: string, open: () => Promise<FeatureBackend>): Promise<FeatureBackend> {
    // Another plan or size: the waiting backends of the old one will not serve again soon.
    for (const stale of this.waiting.filter((w) => w.key !== key)) this.drop(stale, 'another plan or frame size');
    const found = this.waiting.findIndex((w) => w.key === key);
    if (found >= 0) {
      const [w] = this.waiting.splice(found, 1);
      clearTimeout(w!.timer);
      this.options.onEvent?.(`backend reused (${w!.backend.description})`);
      return w!.backend;
    }
    const backend = await open();
    this.opened++;
    this.options.onEvent?.(`backend opened (${backend.description})`);
    return backend;
  }

  /** The run plan for `key`: the latest one again, or a new one from `resolve`. */
  plan<T>(key: string, resolve: () => Promise<T>): Promise<T> {
    if (this.latestPlan?.key === key) return this.latestPlan.plan as Promise<T>;
    const plan = resolve();
    const entry = { key, plan };
    this.latestPlan = entry;
    plan.catch(() => {
      if (this.latestPlan === entry) this.latestPlan = undefined;
    });
    return plan;
  }

  /** A segment is done with `backend`: kept for the next one if it `healthy`, else closed. */
  async release(key: string, backend: FeatureBackend, healthy: boolean): Promise<void> {
    if (!healthy || this.closed || this.idleMs <= 0) {
      await backend.close().catch(() => undefined);
      return;
    }
    const w: Waiting = { key, backend, timer: setTimeout(() => this.drop(w, 'idle'), this.idleMs) };
    // An idle backend does not keep the process alive.
    w.timer.unref();
    this.waiting.push(w);
  }

  /** Closes every waiting backend; later releases close theirs. */
  async close(): Promise<void> {
    this.closed = true;
    const all = this.waiting.splice(0);
    for (const w of all) clearTimeout(w.timer);
    await Promise.all(all.map((w) => w.backend.close().catch(() => undefined)));
  }

  private drop(w: Waiting, why: string): void {
    const at = this.waiting.indexOf(w);
    if (at < 0) return;
    this.waiting.splice(at, 1);
    clearTimeout(w.timer);
    this.options.onEvent?.(`backend closed (${why})`);
    void w.backend.close().catch(() => undefined);
  }
}
