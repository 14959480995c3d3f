// Headless Chromium for tests: finds the browser and takes a screenshot of a local page.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** How CI (Debian bookworm) installs it. */
export const CHROMIUM_APT = 'apt-get install -y -q chromium';

/** The Chromium executable: $CHROMIUM if set, else chromium / chromium-browser on PATH; undefined if none. */
export function findChromium() {
  if (process.env.CHROMIUM) return existsSync(process.env.CHROMIUM) ? process.env.CHROMIUM : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const path = join(dir, name);
      if (dir && existsSync(path)) return path;
    }
  }
  return undefined;
}

/**
 * Opens `htmlPath` in headless Chromium (no network, fresh profile) and writes a
 * `width`×`height` screenshot to `pngPath`. Returns Chromium's exit status and output.
 */
export function screenshot(chromium, htmlPath, pngPath, { width = 1280, height = 1600, dark = false, timeoutMs = 90_000 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'vmaf-report-chromium-'));
  try {
    const args = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--hide-scrollbars',
      `--user-data-dir=${profile}`,
      `--screenshot=${pngPath}`,
      `--window-size=${width},${height}`,
      ...(dark ? ['--force-dark-mode', '--blink-settings=preferredColorScheme=0'] : []),
      pathToFileURL(htmlPath).href,
    ];
    const run = spawnSync(chromium, args, { encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, HOME: profile } });
    return { status: run.status, signal: run.signal, error: run.error, output: `${run.stdout ?? ''}${run.stderr ?? ''}` };
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
