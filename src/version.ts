import { readFileSync } from 'node:fs';

/** vmaf-stream's own version, from package.json. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The libvmaf release whose integer features and models vmaf-stream reproduces. */
export const LIBVMAF_VERSION = '3.2.0';
