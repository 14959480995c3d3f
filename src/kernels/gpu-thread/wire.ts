/**
 * What crosses between the main thread and the gpu thread (gpu-thread-backend.ts,
 * gpu-thread-worker.ts): the messages, and frames and errors in a form postMessage keeps.
 *
 * A frame's planes travel as views of its SharedArrayBuffer (pool slots are shared,
 * pool/frame-pool.ts), so no sample is copied; the frame itself stays on the main thread,
 * keyed by an id, until the gpu thread says it has let go of that id.
 */
import { BackendError, InputError, ModelError, UsageError, VmafError, type VmafErrorCode } from '../../errors.js';
import type { Frame, FrameFormat, FrameGroup, FrameLocation, GroupFeatures, Plane } from '../../types.js';
import type { BackendKind } from '../backend.js';
import type { CoreRuns } from '../core-parts.js';
import type { OptionValues } from '../../extractors/option.js';

/** What a gpu thread started before its run opens meanwhile (workerData): the device the run will ask for. */
export interface ThreadStart {
  kind: BackendKind | 'auto';
  gpuAdapter: string | undefined;
  gpuTimeoutMs: number | undefined;
  dawnDiagnostics: boolean;
}

/** What the gpu thread's run is (its first message, 'init'). */
export interface ThreadInit {
  /** The run plan's requests, by extractor name: the thread plans them again (planRun). */
  requests: Array<{ name: string; options: OptionValues }>;
  kind: BackendKind | 'auto';
  threads: number;
  gpuAdapter: string | undefined;
  gpuTimeoutMs: number | undefined;
  /** Dawn's own stderr lines shown (--verbose), as on the main thread. */
  dawnDiagnostics: boolean;
  /** Whether the main thread wants each rendition's aggregate metrics. */
  aggregates: boolean;
}

export interface WireFrame {
  id: number;
  index: number;
  format: FrameFormat;
  pts?: number;
  luma: Plane;
  chroma?: readonly [Plane, Plane];
  located?: FrameLocation;
}

/** A group with each distinct frame once (`frames`), its places by position in that list. */
export interface WireGroup {
  index: number;
  scored?: boolean;
  frames: WireFrame[];
  ref: number;
  dis: Array<number | undefined>;
}

export interface WireError {
  name: string;
  message: string;
  code?: VmafErrorCode;
  input?: string;
  frame?: number;
  stack?: string;
}

export type ToThread =
  | { type: 'init'; init: ThreadInit }
  | { type: 'discard' }
  | { type: 'extract'; stream: number }
  | { type: 'group'; stream: number; group: WireGroup }
  | { type: 'end'; stream: number }
  | { type: 'cancel'; stream: number }
  | { type: 'prepare'; format: FrameFormat }
  | { type: 'locatable'; id: number; format: FrameFormat }
  | { type: 'fault'; fault: 'lose' | 'hang' }
  | { type: 'close' };

export type FromThread =
  | { type: 'ready'; kind: BackendKind; description: string }
  | { type: 'failed'; error: WireError }
  | { type: 'features'; stream: number; group: GroupFeatures }
  | { type: 'release'; ids: number[] }
  | { type: 'locatable'; id: number; reads: boolean }
  | { type: 'complete'; stream: number; coreRuns: CoreRuns | undefined }
  | { type: 'error'; stream: number; error: WireError; coreRuns: CoreRuns | undefined }
  | { type: 'warning'; message: string }
  | { type: 'aggregate'; rendition: number; metrics: Record<string, number> }
  | { type: 'closed' };

/**
 * A frame's planes in shared memory: as they are when the frame is a pool slot's, else
 * copied into a SharedArrayBuffer of their own (a caller's FrameSource), in which case the
 * caller's frame is no longer needed once this returns (`copied`).
 */
export function sharedPlanes(frame: Frame): { luma: Plane; chroma?: readonly [Plane, Plane]; copied: boolean } {
  const planes = [frame.luma, ...(frame.chroma ?? [])];
  if (planes.every((p) => p.buffer instanceof SharedArrayBuffer)) {
    return frame.chroma ? { luma: frame.luma, chroma: frame.chroma, copied: false } : { luma: frame.luma, copied: false };
  }
  const memory = new SharedArrayBuffer(planes.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  const copies = planes.map((p) => {
    const copy = p instanceof Uint16Array ? new Uint16Array(memory, at, p.length) : new Uint8Array(memory, at, p.length);
    copy.set(p);
    at += p.byteLength;
    return copy;
  });
  return copies.length === 3 ? { luma: copies[0]!, chroma: [copies[1]!, copies[2]!], copied: true } : { luma: copies[0]!, copied: true };
}

/** The group as the gpu thread gets it: every distinct frame once, under the id `idOf` gives it. */
export function wireGroup(group: FrameGroup, idOf: (frame: Frame) => WireFrame): WireGroup {
  const frames: WireFrame[] = [];
  const place = new Map<Frame, number>();
  const at = (frame: Frame): number => {
    let i = place.get(frame);
    if (i === undefined) {
      i = frames.push(idOf(frame)) - 1;
      place.set(frame, i);
    }
    return i;
  };
  const wire: WireGroup = { index: group.index, frames, ref: at(group.ref), dis: group.dis.map((f) => (f ? at(f) : undefined)) };
  if (group.scored !== undefined) wire.scored = group.scored;
  return wire;
}

/** The group on the gpu thread: one Frame per distinct frame, whose release() gives its id back. */
export function unwireGroup(wire: WireGroup, release: (id: number) => void): FrameGroup {
  const frames = wire.frames.map((w): Frame => {
    let released = false;
    const frame: Frame = {
      index: w.index,
      format: w.format,
      luma: w.luma,
      release() {
        if (released) return;
        released = true;
        release(w.id);
      },
    };
    if (w.chroma) frame.chroma = w.chroma;
    if (w.pts !== undefined) frame.pts = w.pts;
    if (w.located) frame.located = w.located;
    return frame;
  });
  const group: FrameGroup = { index: wire.index, ref: frames[wire.ref]!, dis: wire.dis.map((i) => (i === undefined ? undefined : frames[i])) };
  if (wire.scored !== undefined) group.scored = wire.scored;
  return group;
}

export function toWireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const wire: WireError = { name: error.name, message: error.message };
  if (error.stack !== undefined) wire.stack = error.stack;
  if (error instanceof VmafError) wire.code = error.code;
  if (error instanceof InputError) {
    wire.input = error.input;
    if (error.frame !== undefined) wire.frame = error.frame;
  }
  return wire;
}

const CLASSES: Record<string, { prototype: VmafError }> = { VmafError, UsageError, InputError, ModelError, BackendError };

/** The error as the gpu thread raised it: the same class (for vmaf-stream's own), code, message and fields. */
export function fromWireError(wire: WireError): Error {
  if (wire.code === undefined) {
    const error = new Error(wire.message);
    error.name = wire.name;
    if (wire.stack !== undefined) error.stack = wire.stack;
    return error;
  }
  const error = new VmafError(wire.code, wire.message);
  Object.setPrototypeOf(error, (CLASSES[wire.name] ?? VmafError).prototype);
  error.name = wire.name;
  if (wire.stack !== undefined) error.stack = wire.stack;
  if (wire.name === 'InputError') Object.assign(error, { input: wire.input, frame: wire.frame });
  return error;
}
