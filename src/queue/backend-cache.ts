/**
 * A worker's backends, kept from one segment to the next. Opening a backend costs little on
 * the cpu, but on a gpu it opens the device and builds the pipelines of each frame size: a
 * worker scoring a title's segments one after the other would pay that per segment. So a
 * backend that finished a segment waits here, and the next segment of the same plan and
 * frame size takes it (each extractMany is a stream of its own, so a reused backend scores
 * exactly as a fresh one).
 *
 * A cpu backend is shared, too, by segments that run at once (a pipelined worker's next
 * segment starts while the last one's frames finish; see worker.ts): its streams keep their
 * state apart and its jobs share the process's one native pool anyway. A gpu backend serves
 * one segment at a time.
 *
 * The run plan (models loaded, features planned) is kept the same way, for the latest plan
 * only: every segment of a title would otherwise read and parse its models again.
 *
 * Bounded: a gpu backend is used by one segment at a time (a worker of concurrency N holds at
 * most N); one that waits `idleMs` unused is closed; a segment of another plan or size
 * closes every waiting backend of the old one; one whose segment failed is closed once its
 * other users are done, and serves no one new (a lost device must not serve the next segment).
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

interface Kept {
  key: string;
  backend: FeatureBackend;
  /** Segments using it now. */
  users: number;
  /** Its idle timer, while nobody uses it. */
  timer: NodeJS.Timeout | undefined;
  /** A segment on it failed: closed once its users are done, never handed out again. */
  broken: boolean;
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
  private readonly kept: Kept[] = [];
  private readonly idleMs: number;
  private closed = false;
  /** The latest run plan, by planKey (a failed one is not kept). */
  private latestPlan: { key: string; plan: Promise<unknown> } | undefined;
  /** Backends opened so far (a worker's log says so; the tests count them). */
  opened = 0;

  constructor(private readonly options: BackendCacheOptions = {}) {
    this.idleMs = options.idleMs ?? DEFAULT_BACKEND_IDLE_MS;
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

  /** A backend for `key`: a waiting one, a cpu one in use, or a new one from `open`. Give it back with release(). */
  async acquire(key: string, open: () => Promise<FeatureBackend>): Promise<FeatureBackend> {
    // Another plan or size: the waiting backends of the old one will not serve again soon.
    for (const stale of this.kept.filter((k) => k.key !== key && k.users === 0)) this.drop(stale, 'another plan or frame size');
    const found =
      this.kept.find((k) => k.key === key && !k.broken && k.users === 0) ??
      // (idleMs 0 asks for a backend per segment: none shared either.)
      (this.idleMs > 0 ? this.kept.find((k) => k.key === key && !k.broken && k.backend.kind === 'cpu') : undefined);
    if (found) {
      if (found.timer) clearTimeout(found.timer);
      found.timer = undefined;
      found.users++;
      this.options.onEvent?.(`backend reused (${found.backend.description})`);
      return found.backend;
    }
    const backend = await open();
    this.opened++;
    this.options.onEvent?.(`backend opened (${backend.description})`);
    this.kept.push({ key, backend, users: 1, timer: undefined, broken: false });
    return backend;
  }

  /** A segment is done with `backend`: kept for the next one if it `healthy`, else closed (once its other users are done). */
  async release(backend: FeatureBackend, healthy: boolean): Promise<void> {
    const k = this.kept.find((x) => x.backend === backend);
    if (!k) {
      await backend.close().catch(() => undefined);
      return;
    }
    k.users--;
    if (!healthy) k.broken = true;
    if (k.users > 0) return;
    if (k.broken || this.closed || this.idleMs <= 0) {
      this.kept.splice(this.kept.indexOf(k), 1);
      await backend.close().catch(() => undefined);
      return;
    }
    k.timer = setTimeout(() => this.drop(k, 'idle'), this.idleMs);
    // An idle backend does not keep the process alive.
    k.timer.unref();
  }

  /** Closes every waiting backend; later releases close theirs. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.kept.filter((k) => k.users === 0);
    for (const k of idle) {
      if (k.timer) clearTimeout(k.timer);
      this.kept.splice(this.kept.indexOf(k), 1);
    }
    await Promise.all(idle.map((k) => k.backend.close().catch(() => undefined)));
  }

  private drop(k: Kept, why: string): void {
    const at = this.kept.indexOf(k);
    if (at < 0 || k.users > 0) return;
    this.kept.splice(at, 1);
    if (k.timer) clearTimeout(k.timer);
    this.options.onEvent?.(`backend closed (${why})`);
    void k.backend.close().catch(() => undefined);
  }
}
