// psnr_hvs (libvmaf's xiph psnr_hvs.c): psnr_hvs_y/cb/cr and psnr_hvs bit-identical to
// libvmaf 3.2.0 on every golden clip, in its order; 4:2:2; what it refuses; properties.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { assertGoldenParity, goldenClipsWith, goldenPair } from '../helpers/golden-extractor.mjs';
import { write10bit422 } from '../helpers/y4m-422.mjs';
import { writeGray, writeY4mPair } from '../helpers/y4m-formats.mjs';

const KEYS = ['psnr_hvs_y', 'psnr_hvs_cb', 'psnr_hvs_cr', 'psnr_hvs'];
const run = (ref, dis) => lastValueFrom(score(ref, dis, { backend: 'cpu', features: ['psnr_hvs'], noPrediction: true }).pipe(toArray()));
const pick = (r) => KEYS.map((k) => r.features[k]);

describe('psnr_hvs extractor', function () {
  this.timeout(300_000);
  let tmp;
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmafs-psnr-hvs-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  describe('golden parity (cpu, every frame exactly)', function () {
    const clips = goldenClipsWith(KEYS);
    let compared = 0;
    after(() => console.log(`      psnr_hvs*: ${compared} values exactly equal to libvmaf`));
    it('has the golden clips with psnr_hvs', () => assert.ok(clips.length >= 12, `found ${clips.length}`));
    for (const clip of clips) {
      it(clip, async () => {
        compared += (await assertGoldenParity(clip, 'psnr_hvs', KEYS)).compared;
      });
    }
  });

  it("gives libvmaf's values for a 10-bit 4:2:2 clip", async () => {
    const [ref8, dis8] = goldenPair('src01_160x90_8bit');
    const ref = write10bit422(ref8, join(tmp, 'ref422.y4m'), 3);
    const dis = write10bit422(dis8, join(tmp, 'dis422.y4m'), 3);
    // libvmaf 3.2.0 (vmaf --feature psnr_hvs) on these files.
    assert.deepEqual((await run(ref, dis)).map(pick), [
      [49.29576111314188, 41.17128720845608, 44.22248917761907, 46.81379319102986],
      [40.7044971799791, 41.87310907711862, 44.29983271534894, 41.06611625010591],
      [37.43806019151186, 42.093815310584965, 43.922109832293124, 38.10976760242105],
    ]);
  });

  it('leaves psnr_hvs_y infinite when only chroma differs, and psnr_hvs finite', async () => {
    const p = writeY4mPair(tmp, 'chroma-only', { width: 96, height: 64, seed: 11, chromaError: 5 });
    const [r] = await run(p.ref, p.dis);
    assert.equal(r.features.psnr_hvs_y, Infinity);
    assert.ok(Number.isFinite(r.features.psnr_hvs_cb) && Number.isFinite(r.features.psnr_hvs_cr) && Number.isFinite(r.features.psnr_hvs));
  });

  it('falls as the luma error grows', async () => {
    const values = [];
    for (const e of [1, 4, 16]) {
      const p = writeY4mPair(tmp, `luma-${e}`, { width: 96, height: 64, seed: 5, lumaError: e });
      values.push((await run(p.ref, p.dis))[0].features.psnr_hvs_y);
    }
    assert.ok(values[0] > values[1] && values[1] > values[2], values.join(' > '));
  });

  it('refuses 16-bit input (libvmaf takes at most 12 bits) with E_INPUT_FORMAT', async () => {
    const p = writeY4mPair(tmp, 'deep', { width: 96, height: 64, seed: 2, lumaError: 3, bitDepth: 16 });
    await assert.rejects(run(p.ref, p.dis), (e) => e.code === 'E_INPUT_FORMAT' && /psnr_hvs/.test(e.message) && /12 bits/.test(e.message));
  });

  it('refuses gray and odd-sized 4:2:0 input with E_INPUT_FORMAT', async () => {
    const gray = writeGray(join(tmp, 'gray.y4m'), 64, 48, 10);
    await assert.rejects(run(gray, gray), (e) => e.code === 'E_INPUT_FORMAT' && /4:0:0/.test(e.message));
    const [ref, dis] = goldenPair('mandel_213x121_odd');
    await assert.rejects(run(ref, dis), (e) => e.code === 'E_INPUT_FORMAT' && /psnr_hvs/.test(e.message));
  });
});
