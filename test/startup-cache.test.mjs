// The start-up cache (src/kernels/gpu/startup-cache.ts): what a gpu run's start-up works out
// the same way every time (pruned kernels, the f32 probe's verdict) kept between runs, never
// trusted where it does not check, and runs that read it give the same logs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_ENTRIES, cachedPruneWgsl, cachedValue, keptValue, resetStartupCacheForTest, startupCacheDir } from '../dist/kernels/gpu/startup-cache.js';
import { pruneWgsl } from '../dist/kernels/gpu/wgsl-prune.js';
import { composeWgsl, loadWgsl } from '../dist/kernels/gpu/wgsl.js';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-startup-cache-'));

/** Runs `fn` with the cache in `dir` (or turned off with `off`), restoring the environment after. */
function withCache({ dir, off = false }, fn) {
  const saved = { dir: process.env.VMAF_STREAM_CACHE_DIR, off: process.env.VMAF_STREAM_CACHE };
  process.env.VMAF_STREAM_CACHE_DIR = dir;
  if (off) process.env.VMAF_STREAM_CACHE = '0';
  else delete process.env.VMAF_STREAM_CACHE;
  resetStartupCacheForTest();
  try {
    return fn();
  } finally {
    for (const [name, value] of [['VMAF_STREAM_CACHE_DIR', saved.dir], ['VMAF_STREAM_CACHE', saved.off]]) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetStartupCacheForTest();
  }
}

describe('start-up cache', function () {
  this.timeout(300000);

  it('computes a value once: later lookups read it from the file, bound to its key', () => {
    const dir = join(tmp, 'once');
    withCache({ dir }, () => {
      let calls = 0;
      const compute = () => `value ${++calls}`;
      assert.equal(cachedValue('t', 'key a', compute), 'value 1');
      resetStartupCacheForTest(); // as a new process would
      assert.equal(cachedValue('t', 'key a', compute), 'value 1');
      assert.equal(calls, 1);
      assert.equal(cachedValue('t', 'key b', compute), 'value 2');
      assert.equal(keptValue('t', 'key a'), 'value 1');
      assert.equal(keptValue('t', 'key c'), undefined);
      assert.equal(startupCacheDir(), dir);
      assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.partial')), []);
    });
  });

  it('an entry that does not check (changed, truncated, another key\'s) is computed again and replaced', () => {
    const dir = join(tmp, 'damaged');
    withCache({ dir }, () => {
      cachedValue('t', 'key a', () => 'the right value');
      cachedValue('t', 'key b', () => 'b\'s value');
      const [fileA, fileB] = ['key a', 'key b'].map((k) => readdirSync(dir).find((f) => readFileSync(join(dir, f), 'utf8').endsWith(k === 'key a' ? 'the right value' : 'b\'s value')));
      const text = readFileSync(join(dir, fileA), 'utf8');
      for (const damaged of [text.replace('right', 'wrong'), text.slice(0, -3), text.slice(0, 40), '', readFileSync(join(dir, fileB), 'utf8')]) {
        writeFileSync(join(dir, fileA), damaged);
        assert.equal(keptValue('t', 'key a'), undefined, JSON.stringify(damaged));
        assert.equal(cachedValue('t', 'key a', () => 'the right value'), 'the right value');
        assert.equal(readFileSync(join(dir, fileA), 'utf8'), text);
      }
    });
  });

  it('is not used where others may write to its folder, or where it is turned off', () => {
    const open = join(tmp, 'open');
    withCache({ dir: open }, () => {
      assert.equal(startupCacheDir(), open); // creates it, private
      chmodSync(open, 0o777);
      resetStartupCacheForTest();
      assert.equal(startupCacheDir(), null);
      let calls = 0;
      cachedValue('t', 'k', () => `${++calls}`);
      cachedValue('t', 'k', () => `${++calls}`);
      assert.equal(calls, 2);
      assert.deepEqual(readdirSync(open), []);
    });
    withCache({ dir: join(tmp, 'off'), off: true }, () => {
      assert.equal(startupCacheDir(), null);
      assert.equal(keptValue('t', 'k'), undefined);
    });
    // A path that cannot be a folder: computed, never an error.
    const file = join(tmp, 'a-file');
    writeFileSync(file, '');
    withCache({ dir: join(file, 'below') }, () => {
      assert.equal(startupCacheDir(), null);
      assert.equal(cachedValue('t', 'k', () => 'v'), 'v');
    });
  });

  it('holds at most MAX_ENTRIES: the first new entry of a run removes the oldest written, and side files left behind', () => {
    const dir = join(tmp, 'bounded');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const old = Date.now() / 1000 - 86400;
    // Entries another release kept, oldest first, and a side file an interrupted write left.
    for (let i = 0; i < MAX_ENTRIES + 20; i++) {
      const file = join(dir, `wgsl-old${String(i).padStart(5, '0')}`);
      writeFileSync(file, 'x');
      utimesSync(file, old + i, old + i);
    }
    writeFileSync(join(dir, 'wgsl-abc.123-0.partial'), 'half');
    utimesSync(join(dir, 'wgsl-abc.123-0.partial'), old, old);
    withCache({ dir }, () => {
      assert.equal(cachedValue('t', 'a new key', () => 'new'), 'new');
      const names = readdirSync(dir);
      assert.equal(names.length, Math.floor(MAX_ENTRIES * 0.75) + 1);
      assert.ok(!names.some((n) => n.endsWith('.partial')), 'the stale side file is gone');
      const kept = names.filter((n) => n.startsWith('wgsl-old')).sort();
      assert.equal(kept[0], `wgsl-old${String(MAX_ENTRIES + 20 - Math.floor(MAX_ENTRIES * 0.75)).padStart(5, '0')}`, 'the oldest went first');
      assert.equal(keptValue('t', 'a new key'), 'new');
      // Once per run: a second new entry does not list the folder again.
      cachedValue('t', 'another key', () => 'v');
      assert.equal(readdirSync(dir).length, Math.floor(MAX_ENTRIES * 0.75) + 2);
    });
  });

  it('kept pruned kernels are the pruner\'s text exactly, for every entry point of the shipped kernels it is given', () => {
    const dir = join(tmp, 'prune');
    const sources = [
      ['vif/vif-gain-pass.wgsl', composeWgsl(['vif/vif-gain-pass.wgsl'])],
      ['adm/adm-dwtn.wgsl', loadWgsl('adm/adm-dwtn.wgsl')],
      ['adm/adm-mask.wgsl', loadWgsl('adm/adm-mask.wgsl')],
      ['f32-probe.wgsl', loadWgsl('f32-probe.wgsl')],
    ];
    withCache({ dir }, () => {
      let checked = 0;
      for (const pass of ['computed', 'read']) {
        resetStartupCacheForTest();
        for (const [name, code] of sources) {
          const entries = [...code.matchAll(/@compute[^\n]*\n?\s*fn\s+(\w+)/g)].map((m) => m[1]);
          assert.ok(entries.length > 0, name);
          for (const entry of entries) {
            assert.equal(cachedPruneWgsl(code, entry), pruneWgsl(code, entry), `${name} ${entry} (${pass})`);
            checked++;
          }
        }
      }
      assert.ok(checked >= 8);
      assert.ok(readdirSync(dir).filter((f) => f.startsWith('wgsl-')).length >= checked / 2);
    });
  });

  it('a gpu run with an empty cache and one that reads it write the same log; the second neither prunes nor probes afresh', () => {
    const clip = goldenClip('src01_160x90_8bit');
    const dir = join(tmp, 'cli');
    const run = (name) => {
      const out = join(tmp, `${name}.json`);
      const r = spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', 'gpu', '--feature', 'float_ssim', '--json', '-o', out, '-q'], {
        encoding: 'utf8',
        timeout: 240000,
        env: { ...process.env, VMAF_STREAM_CACHE_DIR: dir, VMAF_STREAM_CACHE: '', VMAF_STREAM_TRACE: '1' },
      });
      assert.equal(r.status, 0, r.stderr);
      return { log: readFileSync(out, 'utf8'), trace: r.stderr };
    };
    const first = run('first');
    const files = readdirSync(dir);
    assert.ok(files.some((f) => f.startsWith('f32-probe-')) && files.filter((f) => f.startsWith('wgsl-')).length >= 5, files.join(' '));
    assert.match(first.trace, /pipeline call: f32 probe/);
    const second = run('second');
    assert.equal(second.log, first.log);
    assert.doesNotMatch(second.trace, /pipeline call: f32 probe/);
    assert.deepEqual(readdirSync(dir).sort(), files.sort(), 'nothing new to keep');
    const log = JSON.parse(second.log);
    assert.equal(log.frames.length, 48);
    assert.ok(log.frames.every((f) => typeof f.metrics.float_ssim === 'number' && typeof f.metrics.vmaf === 'number'));
  });
});
