/**
 * A fluent-ffmpeg FfmpegCommand as an input: the run starts the user's transcode and scores
 * the ENCODED output it names, frame by frame, while the encode proceeds; the output still
 * goes where the command sends it.
 *
 * fluent-ffmpeg is an optional peer dependency: nothing here imports it. A command is
 * recognised by its shape (run, kill, on, and the _inputs/_outputs lists every
 * fluent-ffmpeg 2.x command has; the package is archived upstream, so that shape is frozen).
 *
 * How the encoded bytes come back, live. ffmpeg cannot hand one encoder's packets to two
 * outputs, except through the tee muxer; re-encoding a second copy would score another
 * encode, and decoding the pre-encode frames would score nothing. So, by where the named
 * output goes:
 *
 * - A Writable (`command.output(stream)`): fluent-ffmpeg pipes ffmpeg's stdout into the
 *   output's target. The target becomes our PassThrough, piped on to the user's stream and to
 *   the decoder: both see the very same bytes, and the slower of the two paces ffmpeg.
 * - A file or URL: the output's muxer becomes `tee`, with two slaves: the user's target, in
 *   the user's format with the user's muxer options (moved from the output's options into the
 *   slave, as the tee muxer needs them), and `nut` carrying the video packets to a Unix socket
 *   of ours (a private temporary folder; loopback TCP on Windows), which the decoder reads.
 *   The tee muxer needs streams mapped and encoders named (it has no defaults of its own):
 *   where the output has no `-map`, it gets ffmpeg's default selection for a one-input
 *   transcode (the first video stream, the first audio stream where the format takes audio),
 *   and where it names no encoder, the format's default codec (`ffmpeg -h muxer=FMT`); the
 *   video encoder is asked for global headers, which ffmpeg cannot know to ask for through tee.
 *
 * Either way the decoded frames are the encoder's output, decoded by the project's own decode
 * path (openFrameSource over a Readable: FfmpegSource, or the y4m reader for a y4m output).
 * A full socket or a full pipe blocks the transcoding ffmpeg, so the encode runs no faster
 * than the scoring: memory stays flat.
 *
 * The run owns the command: it calls run() when the input is opened, and when the run ends
 * early (unsubscribe, an error, frameCnt) it kills the transcode. The source ends only once
 * the command has finished, so the user's output is complete when the run completes; a
 * failed command (a bad codec, a missing input) fails the run with E_FFMPEG and ffmpeg's
 * message, whatever the decoder saw of it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';

import { UsageError, VmafError } from '../errors.js';
import type { Frame, FrameFormat, FrameSource } from '../types.js';
import { resolveFfmpegPath } from './ffmpeg-path.js';

/** An argument list of fluent-ffmpeg's (utils.args): call to append, get() to read. */
interface FluentArgs {
  (...args: string[]): void;
  get(): string[];
  clear(): void;
}

/** One output of a fluent-ffmpeg command, as fluent-ffmpeg 2.x keeps it. */
interface FluentOutput {
  target?: string | Writable;
  isFile?: boolean;
  options: FluentArgs;
  video: FluentArgs;
  audio: FluentArgs;
}

/** The parts of a fluent-ffmpeg FfmpegCommand used here. */
export interface FluentCommand {
  run(): void;
  kill(signal?: string): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  removeListener(event: string, listener: (...args: any[]) => void): unknown;
  _inputs: unknown[];
  _outputs: FluentOutput[];
  _complexFilters?: FluentArgs;
  _getFfmpegPath?(callback: (err: Error | null, path: string) => void): void;
  ffmpegProc?: unknown;
}

/** Duck typing: a fluent-ffmpeg FfmpegCommand (2.x), without importing fluent-ffmpeg. */
export function isFluentCommand(x: unknown): x is FluentCommand {
  if (typeof x !== 'object' || x === null) return false;
  const c = x as Partial<FluentCommand>;
  return (
    typeof c.run === 'function' && typeof c.kill === 'function' && typeof c.on === 'function' &&
    Array.isArray(c._inputs) && Array.isArray(c._outputs)
  );
}

export interface TranscodeInputOptions {
  /**
   * Which of the command's outputs to score: its position (0 is the first) or its target
   * (the path or URL given to output()/save(), or the Writable itself). Default: the only one;
   * a command with several outputs must name one.
   */
  output?: number | string | Writable;
  /** Names the input in messages and (in a ladder) the rendition (default: the output's target, or 'transcode'). */
  label?: string;
}

/** A fluent-ffmpeg command and the output of it to score: an input of every scoring view. */
export class TranscodeInput {
  readonly command: FluentCommand;
  /** The position of the scored output in the command's outputs. */
  readonly output: number;
  readonly label: string;
  /** Set once a run has started the command: it runs once. */
  opened = false;

  constructor(command: FluentCommand, options: TranscodeInputOptions = {}) {
    if (!isFluentCommand(command)) throw new UsageError('transcodeInput: not a fluent-ffmpeg FfmpegCommand');
    const outputs = command._outputs.filter((o) => o.target !== undefined);
    if (outputs.length === 0) throw new UsageError('transcodeInput: the command has no output: give it one with output(path or stream)');
    const wanted = options.output;
    let index: number;
    if (wanted === undefined) {
      if (outputs.length > 1) {
        throw new UsageError(`transcodeInput: the command has ${outputs.length} outputs: name the one to score with { output: N } or its target`);
      }
      index = command._outputs.indexOf(outputs[0]!);
    } else if (typeof wanted === 'number') {
      if (!Number.isInteger(wanted) || wanted < 0 || wanted >= outputs.length) {
        throw new UsageError(`transcodeInput: no output ${String(wanted)}: the command has ${outputs.length} (0 to ${outputs.length - 1})`);
      }
      index = command._outputs.indexOf(outputs[wanted]!);
    } else {
      index = command._outputs.findIndex((o) => o.target === wanted);
      if (index < 0) throw new UsageError(`transcodeInput: the command has no output ${typeof wanted === 'string' ? `"${wanted}"` : 'to that stream'}`);
    }
    if (command.ffmpegProc) throw new UsageError('transcodeInput: the command is already running: pass it before run(), save() or pipe()');
    this.command = command;
    this.output = index;
    const target = command._outputs[index]!.target;
    this.label = options.label ?? (typeof target === 'string' ? target : 'transcode');
  }
}

/** Wraps a fluent-ffmpeg command (and which output to score) as an input. */
export function transcodeInput(command: FluentCommand, options: TranscodeInputOptions = {}): TranscodeInput {
  return new TranscodeInput(command, options);
}

export function isTranscodeInput(x: unknown): x is TranscodeInput {
  return x instanceof TranscodeInput;
}

/** Opens the decoder over the encoded bytes (openFrameSource's stream route). */
export type OpenEncoded = (encoded: Readable) => Promise<FrameSource>;

/** The command's outcome: undefined when it finished, else its error. */
type Outcome = Error | undefined;

const transcodeFailure = (label: string, err: Error): VmafError =>
  new VmafError('E_FFMPEG', `${label}: the transcode failed: ${err.message.trim()}`, { cause: err });

/**
 * Starts the command and returns the FrameSource of its named output's encoded frames.
 * ffmpegPath: the binary for our own helper calls when the command names none.
 */
export function openTranscodeSource(input: TranscodeInput, openEncoded: OpenEncoded, ffmpegPath?: string, label = input.label): FrameSource {
  if (input.opened || running.has(input.command)) {
    throw new UsageError(`${label}: a fluent-ffmpeg command runs once, and one of its outputs is scored: it is already an input of a run`);
  }
  input.opened = true;
  running.add(input.command);
  return new TranscodeSource(input, openEncoded, ffmpegPath, label);
}

/** Commands a run has started: each runs once. */
const running = new WeakSet<FluentCommand>();

const implicit = new WeakMap<FluentCommand, TranscodeInput>();

/** A TranscodeInput as it is; a bare command as its only output (the same TranscodeInput each time). */
export function asTranscodeInput(input: TranscodeInput | FluentCommand): TranscodeInput {
  if (isTranscodeInput(input)) return input;
  let t = implicit.get(input);
  if (!t) {
    t = transcodeInput(input);
    implicit.set(input, t);
  }
  return t;
}

class TranscodeSource implements FrameSource {
  readonly label: string;
  private readonly command: FluentCommand;
  private readonly outcome: Promise<Outcome>;
  private settle!: (o: Outcome) => void;
  private settled = false;
  private started = false;
  private closed = false;
  private ended = false;
  private readonly opening: Promise<FrameSource>;
  private readonly cleanups: Array<() => void> = [];

  constructor(
    private readonly input: TranscodeInput,
    openEncoded: OpenEncoded,
    ffmpegPath: string | undefined,
    label: string,
  ) {
    this.label = label;
    this.command = input.command;
    this.outcome = new Promise<Outcome>((resolve) => {
      this.settle = (o) => {
        if (this.settled) return;
        this.settled = true;
        resolve(o);
      };
    });
    const onError = (err: Error) => this.settle(err instanceof Error ? err : new Error(String(err)));
    const onEnd = () => this.settle(undefined);
    const onStart = () => {
      this.started = true;
      if (this.closed) this.kill(); // closed while fluent-ffmpeg was still checking capabilities
    };
    this.command.on('error', onError);
    this.command.on('end', onEnd);
    this.command.on('start', onStart);
    this.cleanups.push(() => {
      this.command.removeListener('error', onError);
      this.command.removeListener('end', onEnd);
      this.command.removeListener('start', onStart);
    });
    this.opening = this.launch(openEncoded, ffmpegPath);
    this.opening.catch(() => {}); // reported by format() / next()
  }

  private async launch(openEncoded: OpenEncoded, ffmpegPath: string | undefined): Promise<FrameSource> {
    const output = this.command._outputs[this.input.output]!;
    let encoded: Readable;
    if (typeof output.target === 'string') {
      const binary = await commandFfmpegPath(this.command, ffmpegPath);
      const channel = await listen();
      this.cleanups.push(() => channel.dispose());
      await teeOutput(this.command, output, channel.url, binary);
      this.start();
      encoded = await this.race(channel.accepted);
    } else {
      const destination = output.target!;
      // No 'close' of its own: fluent-ffmpeg kills ffmpeg 20 ms after its target closes.
      const tap = new PassThrough({ emitClose: false, autoDestroy: false, highWaterMark: 1 << 20 });
      const toDecoder = new PassThrough({ highWaterMark: 1 << 20 });
      destination.on('error', (err: Error) => tap.destroy(err)); // fluent-ffmpeg reports it, and stops ffmpeg
      tap.pipe(destination);
      tap.pipe(toDecoder);
      output.target = tap;
      this.start();
      encoded = toDecoder;
    }
    return openEncoded(encoded);
  }

  private start(): void {
    try {
      this.command.run();
    } catch (err) {
      this.settle(err as Error);
    }
  }

  /**
   * p, unless the command fails first. A command that succeeded did connect (the tee opens
   * its slaves before the first packet): its connection may just not be accepted yet.
   */
  private race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([
      p,
      this.outcome.then((o) => {
        if (o) throw transcodeFailure(this.label, o);
        return p;
      }),
    ]);
  }

  /** The command's error, if it failed, replaces whatever the decoder said. */
  private async failure(decoderError: unknown): Promise<unknown> {
    // The decoder fails first when the transcode dies (the encoded stream stops short):
    // what counts is why the transcode died.
    const o = await Promise.race([this.outcome, new Promise<'running'>((r) => setTimeout(() => r('running'), 2000).unref())]);
    if (o instanceof Error) return transcodeFailure(this.label, o);
    return decoderError;
  }

  async format(): Promise<FrameFormat> {
    try {
      return await (await this.opening).format();
    } catch (err) {
      throw await this.failure(err);
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    let inner: AsyncIterator<Frame> | undefined;
    return {
      next: async () => {
        try {
          if (!inner) inner = (await this.opening)[Symbol.asyncIterator]();
          const step = await inner.next();
          if (step.done) {
            this.ended = true;
            // The source ends when the command does: the output complete, or its error.
            const o = await this.outcome;
            if (o && !this.closed) throw transcodeFailure(this.label, o);
          }
          return step;
        } catch (err) {
          if (err instanceof VmafError && err.code === 'E_FFMPEG' && err.message.startsWith(`${this.label}: the transcode failed`)) throw err;
          throw await this.failure(err);
        }
      },
      return: async (value?: unknown) => (inner?.return ? inner.return(value) : { done: true, value: undefined }),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.ended || !this.settled) this.kill();
    try {
      await (await this.opening).close();
    } catch {
      // never opened: nothing to close
    }
    await Promise.race([this.outcome, new Promise((r) => setTimeout(r, 2000).unref())]);
    for (const cleanup of this.cleanups) cleanup();
  }

  private kill(): void {
    if (this.settled || !this.started) return; // not running (yet: onStart kills it)
    try {
      this.command.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The binary fluent-ffmpeg will run, for the muxer questions (else ours). */
async function commandFfmpegPath(command: FluentCommand, fallback: string | undefined): Promise<string> {
  const own = await new Promise<string | undefined>((resolve) => {
    if (!command._getFfmpegPath) return resolve(undefined);
    command._getFfmpegPath((err, p) => resolve(err || !p ? undefined : p));
  });
  return own ?? resolveFfmpegPath(fallback ? { ffmpegPath: fallback } : {});
}

interface Channel {
  /** Where ffmpeg writes: unix:/path (tcp://127.0.0.1:port on Windows). */
  url: string;
  /** The connection ffmpeg makes: the encoded stream. */
  accepted: Promise<net.Socket>;
  dispose(): void;
}

/** A listening socket for the tee's second slave; it takes one connection. */
async function listen(): Promise<Channel> {
  const server = net.createServer();
  let dir: string | undefined;
  let where: string | net.ListenOptions;
  if (process.platform === 'win32') where = { host: '127.0.0.1', port: 0 };
  else {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vmaf-stream-tee-'));
    where = path.join(dir, 'encoded.sock');
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where as net.ListenOptions, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const accepted = new Promise<net.Socket>((resolve, reject) => {
    server.once('connection', (socket: net.Socket) => {
      // One connection only; the folder goes at once, before the first frame.
      server.close();
      if (dir === undefined) resolve(socket);
      else void rm(dir, { recursive: true, force: true }).catch(() => {}).then(() => resolve(socket));
    });
    server.once('error', reject);
  });
  accepted.catch(() => {});
  const address = server.address();
  const url = typeof address === 'string' ? `unix:${address}` : `tcp://127.0.0.1:${(address as net.AddressInfo).port}`;
  return {
    url,
    accepted,
    dispose: () => {
      server.close();
      if (dir !== undefined) void rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

/** What `ffmpeg -h muxer=NAME` and `-h full` say about a muxer. */
interface MuxerInfo {
  /** Options the muxer's header takes: its private ones and libavformat's generic output ones. */
  options: Set<string>;
  defaultVideoCodec: string | undefined;
  defaultAudioCodec: string | undefined;
}

const muxerCache = new Map<string, Promise<MuxerInfo>>();
const guessCache = new Map<string, Promise<string>>();

function ffmpegText(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (text += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (text += t));
    child.on('error', reject);
    child.on('close', () => resolve(text));
  });
}

/** Options listed in one "… AVOptions:" section of ffmpeg's help (encoding ones, E flag). */
function sectionOptions(help: string, header: RegExp): string[] {
  const names: string[] = [];
  let inside = false;
  for (const line of help.split('\n')) {
    if (/AVOptions:\s*$/.test(line)) inside = header.test(line);
    else if (inside) {
      const m = /^ {2}-(\S+)\s+<\w+>\s+(\S+)/.exec(line);
      if (m && m[2]!.startsWith('E')) names.push(m[1]!);
    }
  }
  return names;
}

function muxerInfo(binary: string, muxer: string): Promise<MuxerInfo> {
  const key = `${binary}\0${muxer}`;
  let info = muxerCache.get(key);
  if (!info) {
    info = Promise.all([ffmpegText(binary, ['-hide_banner', '-h', `muxer=${muxer}`]), ffmpegText(binary, ['-hide_banner', '-h', 'full'])]).then(
      ([own, full]) => {
        if (/Unknown format/i.test(own)) throw new UsageError(`no muxer "${muxer}" in ${binary}`);
        return {
          options: new Set([...sectionOptions(own, /muxer AVOptions/), ...sectionOptions(full, /^AVFormatContext AVOptions/)]),
          defaultVideoCodec: /Default video codec: ([\w-]+)/.exec(own)?.[1],
          defaultAudioCodec: /Default audio codec: ([\w-]+)/.exec(own)?.[1],
        };
      },
    );
    muxerCache.set(key, info);
    info.catch(() => muxerCache.delete(key));
  }
  return info;
}

/**
 * The muxer ffmpeg picks for a target without -f, as ffmpeg itself guesses it: it opens a
 * throwaway file of the same extension (one 16x16 video frame) and says "Output #0, NAME, to".
 * An audio-only format says nothing: the user names it with format().
 */
function guessMuxer(binary: string, target: string): Promise<string> {
  const ext = path.extname(target.replace(/[?#].*$/, '')).toLowerCase();
  const key = `${binary}\0${ext}`;
  let guess = guessCache.get(key);
  if (!guess) {
    guess = (async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'vmaf-stream-guess-'));
      try {
        const text = await ffmpegText(binary, [
          '-hide_banner', '-nostdin', '-f', 'lavfi', '-i', 'color=s=16x16:d=0.04', '-frames:v', '1', '-y', path.join(dir, `guess${ext}`),
        ]);
        const name = /Output #0, ([\w,-]+), to/.exec(text)?.[1] ?? /Requested output format '([^']+)'/.exec(text)?.[1];
        if (!name) throw new UsageError(`cannot tell the format of the output "${target}": name it with the command's format()`);
        return name.split(',')[0]!;
      } finally {
        await rm(dir, { recursive: true, force: true }).catch(() => {});
      }
    })();
    guessCache.set(key, guess);
    guess.catch(() => guessCache.delete(key));
  }
  return guess;
}

/** Escapes for one level of av_get_token: a backslash before each special character. */
function escapeFor(text: string, specials: string): string {
  return [...text].map((c) => (c === '\\' || c === "'" || specials.includes(c) ? `\\${c}` : c)).join('');
}

/** A tee slave: [k=v:...]target, its option values escaped for the slave's own parse. */
function teeSlave(options: Array<[string, string]>, target: string): string {
  const spec = options.map(([k, v]) => `${k}=${escapeFor(v, ':|[]')}`).join(':');
  return `[${spec}]${target}`;
}

const CODEC_FLAGS = {
  video: ['-c:v', '-codec:v', '-vcodec', '-c', '-codec'],
  audio: ['-c:a', '-codec:a', '-acodec', '-c', '-codec'],
};

/**
 * Rewrites the output so that its muxer is tee: the user's target and format, with the
 * user's muxer options, and nut (video) to `socketUrl`.
 */
async function teeOutput(command: FluentCommand, output: FluentOutput, socketUrl: string, binary: string): Promise<void> {
  const target = output.target as string;
  const own = output.options.get().slice();
  const formatAt = own.lastIndexOf('-f');
  let muxer: string;
  if (formatAt >= 0 && own[formatAt + 1] !== undefined) {
    muxer = own[formatAt + 1]!;
    own.splice(formatAt, 2);
  } else {
    muxer = await guessMuxer(binary, target);
  }
  const info = await muxerInfo(binary, muxer);

  // The muxer's own options go to its slave; everything else (codecs, maps, filters) stays.
  const kept: string[] = [];
  const slaveOptions: Array<[string, string]> = [['f', muxer]];
  for (let i = 0; i < own.length; i++) {
    const arg = own[i]!;
    const name = arg.startsWith('-') ? arg.slice(1) : undefined;
    if (name !== undefined && info.options.has(name) && i + 1 < own.length) {
      slaveOptions.push([name, own[i + 1]!]);
      i++;
    } else kept.push(arg);
  }

  const all = [...output.video.get(), ...output.audio.get(), ...kept];
  const has = (flags: string[]) => all.some((a) => flags.includes(a));
  const noVideo = has(['-vn']);
  const noAudio = has(['-an']) || info.defaultAudioCodec === undefined;
  const extra: string[] = [];
  const complex = command._complexFilters?.get() ?? [];
  if (!all.includes('-map') && complex.length === 0) {
    // ffmpeg's default selection for a one-input transcode; the tee muxer selects nothing itself.
    if (!noVideo) extra.push('-map', '0:v:0');
    if (!noAudio) extra.push('-map', '0:a:0?');
  }
  if (!noVideo && !has(CODEC_FLAGS.video) && info.defaultVideoCodec) extra.push('-c:v', info.defaultVideoCodec);
  if (!noAudio && !has(CODEC_FLAGS.audio) && info.defaultAudioCodec) extra.push('-c:a', info.defaultAudioCodec);
  // ffmpeg asks encoders for global headers (extradata) only when the muxer is known to want
  // them, which it cannot tell through tee; matroska and nut need them, and mpegts/flv/mp4
  // write them where they go, so every tee'd video stream gets them.
  if (!noVideo && !has(['-flags', '-flags:v'])) extra.push('-flags:v', '+global_header');

  const slaves = [teeSlave(slaveOptions, target), teeSlave([['f', 'nut'], ['select', 'v']], socketUrl)];
  output.options.clear();
  output.options(...kept, ...extra, '-f', 'tee');
  output.target = slaves.map((s) => escapeFor(s, '|')).join('|');
}
