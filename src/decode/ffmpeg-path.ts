/**
 * Finds the ffmpeg binary: the explicit option, else FFMPEG_PATH, else the binary that
 * @ffmpeg-installer/ffmpeg ships. npm may skip that package's postinstall (--ignore-scripts),
 * leaving the binary without its exec bit, so a binary that is not executable is chmod'ed +x.
 */
import { constants as fsConstants } from 'node:fs';
import { access, chmod, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

import { VmafError } from '../errors.js';

export interface FfmpegPathOptions {
  /** An explicit path (or a command name looked up on the PATH). */
  ffmpegPath?: string;
  /** Environment to read FFMPEG_PATH and PATH from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface ResolvedFfmpeg {
  path: string;
  /** Where the path came from, for messages. */
  from: 'option' | 'FFMPEG_PATH' | '@ffmpeg-installer/ffmpeg';
}

const FROM_TEXT: Record<ResolvedFfmpeg['from'], string> = {
  option: 'the ffmpegPath option',
  FFMPEG_PATH: 'the FFMPEG_PATH environment variable',
  '@ffmpeg-installer/ffmpeg': 'the @ffmpeg-installer/ffmpeg package',
};

const isWindows = process.platform === 'win32';

function ffmpegError(message: string, cause?: unknown): VmafError {
  return new VmafError('E_FFMPEG', message, cause === undefined ? undefined : { cause });
}

/** The path @ffmpeg-installer/ffmpeg reports; throws E_FFMPEG when it has none. */
export function installerFfmpegPath(): string {
  try {
    const require = createRequire(import.meta.url);
    const installer = require('@ffmpeg-installer/ffmpeg') as { path?: unknown };
    if (typeof installer.path === 'string' && installer.path) return installer.path;
    throw new Error('it reports no path');
  } catch (err) {
    // The package throws plain strings ("Could not find ffmpeg executable, tried ...").
    const why = err instanceof Error ? err.message : String(err);
    throw ffmpegError(
      `ffmpeg not found: @ffmpeg-installer/ffmpeg has no binary for ${process.platform}-${process.arch} (${why}); ` +
        'install ffmpeg and set FFMPEG_PATH, or pass ffmpegPath',
      err,
    );
  }
}

/** Looks a bare command name up on the PATH. */
async function which(command: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
  const exts = isWindows ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').concat(['']) : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, command + ext);
      try {
        const s = await stat(candidate);
        if (s.isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** Resolves the ffmpeg binary, makes sure it is executable, and says where it came from. */
export async function locateFfmpeg(options: FfmpegPathOptions = {}): Promise<ResolvedFfmpeg> {
  const env = options.env ?? process.env;
  let resolved: ResolvedFfmpeg;
  if (options.ffmpegPath) resolved = { path: options.ffmpegPath, from: 'option' };
  else if (env.FFMPEG_PATH) resolved = { path: env.FFMPEG_PATH, from: 'FFMPEG_PATH' };
  else resolved = { path: installerFfmpegPath(), from: '@ffmpeg-installer/ffmpeg' };
  const from = FROM_TEXT[resolved.from];

  if (!resolved.path.includes('/') && !resolved.path.includes(path.sep)) {
    const found = await which(resolved.path, env);
    if (!found) throw ffmpegError(`ffmpeg not found: "${resolved.path}" (from ${from}) is not on the PATH`);
    resolved = { ...resolved, path: found };
  }

  let info;
  try {
    info = await stat(resolved.path);
  } catch (err) {
    throw ffmpegError(`ffmpeg not found: no file at ${resolved.path} (from ${from})`, err);
  }
  if (!info.isFile()) throw ffmpegError(`ffmpeg not found: ${resolved.path} (from ${from}) is not a file`);
  if (isWindows) return resolved;

  try {
    await access(resolved.path, fsConstants.X_OK);
    return resolved;
  } catch {
    // Not executable: the installer's postinstall (chmod u+x) may not have run.
  }
  try {
    await chmod(resolved.path, info.mode | 0o111);
    await access(resolved.path, fsConstants.X_OK);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw ffmpegError(
      `ffmpeg at ${resolved.path} (from ${from}) is not executable and chmod +x failed (${why}); ` +
        `run "chmod +x ${resolved.path}" or set FFMPEG_PATH to an executable ffmpeg`,
      err,
    );
  }
  return resolved;
}

/** The path of an executable ffmpeg: explicit option > FFMPEG_PATH > @ffmpeg-installer/ffmpeg. */
export async function resolveFfmpegPath(options: FfmpegPathOptions = {}): Promise<string> {
  return (await locateFfmpeg(options)).path;
}
