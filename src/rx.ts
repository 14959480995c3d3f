/**
 * The rxjs values vmaf-stream uses, loaded one module each. `import ... from 'rxjs'` loads
 * its CommonJS index: over 700 modules for every operator there is; these few need about a
 * hundred. Measured (farm-bench, 21 runs each, 2 cores): loading these took a median 0.23 s
 * of CPU against 0.34 s for the public entry, 0.11 s saved on every run before any work,
 * so the internal paths stay. The classes and functions are the very ones 'rxjs' exports
 * (the same CommonJS modules underneath), so callers that import 'rxjs' themselves see the
 * same Observable.
 */
import { createRequire } from 'node:module';
import type * as Rx from 'rxjs';

const require = createRequire(import.meta.url);
let publicEntry: Record<string, unknown> | undefined;

/**
 * `name` from rxjs/internal/`path`, or, where that module is not there (an rxjs whose
 * internal layout or exports map differs from 7.x's), from the public entry: slower to
 * load, never wrong.
 */
function load<T>(path: string, name: string): T {
  try {
    const value = (require(`rxjs/internal/${path}`) as Record<string, T | undefined>)[name];
    if (value !== undefined) return value;
  } catch {
    // not at that path: the public entry below
  }
  publicEntry ??= require('rxjs') as Record<string, unknown>;
  const value = publicEntry[name];
  if (value === undefined) throw new Error(`rxjs has no export '${name}' (vmaf-stream needs rxjs 7)`);
  return value as T;
}

export type { MonoTypeOperatorFunction, ObservableInput, OperatorFunction } from 'rxjs';

export const Observable: typeof Rx.Observable = load('Observable', 'Observable');
export type Observable<T> = Rx.Observable<T>;
export const Subject: typeof Rx.Subject = load('Subject', 'Subject');
export type Subject<T> = Rx.Subject<T>;
export const Subscription: typeof Rx.Subscription = load('Subscription', 'Subscription');
export type Subscription = Rx.Subscription;
export type Subscriber<T> = Rx.Subscriber<T>;

export const concatMap: typeof Rx.concatMap = load('operators/concatMap', 'concatMap');
export const finalize: typeof Rx.finalize = load('operators/finalize', 'finalize');
export const map: typeof Rx.map = load('operators/map', 'map');
export const mergeMap: typeof Rx.mergeMap = load('operators/mergeMap', 'mergeMap');
export const tap: typeof Rx.tap = load('operators/tap', 'tap');
export const catchError: typeof Rx.catchError = load('operators/catchError', 'catchError');
export const defer: typeof Rx.defer = load('observable/defer', 'defer');
export const from: typeof Rx.from = load('observable/from', 'from');
export const throwError: typeof Rx.throwError = load('observable/throwError', 'throwError');
export const lastValueFrom: typeof Rx.lastValueFrom = load('lastValueFrom', 'lastValueFrom');
