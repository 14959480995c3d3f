// ciede (libvmaf's ciede.c): ciede2000 bit-identical to libvmaf 3.2.0 on every golden clip,
// libvmaf's 4:2:2 chroma reading, what it refuses, and identical pictures.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { assertGoldenParity, goldenClipsWith, goldenPair } from '../helpers/golden-extractor.mjs';
import { write10bit422 } from '../helpers/y4m-422.mjs';
import { writeGray, writeY4mPair } from '../helpers/y4m-formats.mjs';

const KEYS = ['ciede2000'];
const run = (ref, dis, feature = 'ciede') => lastValueFrom(score(ref, dis, { backend: 'cpu', features: [feature], noPrediction: true }).pipe(toArray()));

describe('ciede extractor', function () {
  this.timeout(300_000);
  let tmp;
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmafs-ciede-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  describe('golden parity (cpu, every frame exactly)', function () {
    const clips = goldenClipsWith(KEYS);
    let compared = 0;
    after(() => console.log(`      ciede2000: ${compared} values exactly equal to libvmaf`));
    it('has the golden clips with ciede2000', () => assert.ok(clips.length >= 12, `found ${clips.length}`));
    for (const clip of clips) {
      it(clip, async () => {
        compared += (await assertGoldenParity(clip, 'ciede', KEYS)).compared;
      });
    }
  });

  it("reads 10-bit 4:2:2 chroma as libvmaf's ciede does (its values for a 160x90 4:2:2 clip)", async function () {
    const [ref8, dis8] = goldenPair('src01_160x90_8bit');
    const ref = write10bit422(ref8, join(tmp, 'ref422.y4m'), 3);
    const dis = write10bit422(dis8, join(tmp, 'dis422.y4m'), 3);
    const results = await run(ref, dis);
    // libvmaf 3.2.0 (vmaf --feature ciede) on these files.
    assert.deepEqual(results.map((r) => r.features.ciede2000), [42.80053151616716, 40.8974567258722, 39.74229247738795]);
  });

  it('gives +Infinity (null in JSON logs) for identical pictures', async () => {
    const [ref] = goldenPair('src01_160x90_8bit');
    const results = await run(ref, ref);
    assert.ok(results.every((r) => r.features.ciede2000 === Infinity));
  });

  it('is larger (more alike) for a smaller colour error', async () => {
    const a = writeY4mPair(tmp, 'a', { width: 64, height: 48, seed: 7, chromaError: 2 });
    const b = writeY4mPair(tmp, 'b', { width: 64, height: 48, seed: 7, chromaError: 12 });
    const [[small], [large]] = [await run(a.ref, a.dis), await run(b.ref, b.dis)];
    assert.ok(Number.isFinite(small.features.ciede2000) && Number.isFinite(large.features.ciede2000));
    assert.ok(small.features.ciede2000 > large.features.ciede2000, `${small.features.ciede2000} > ${large.features.ciede2000}`);
  });

  it('refuses odd-sized 4:2:0 input (libvmaf has no reader for it) with E_INPUT_FORMAT', async () => {
    const [ref, dis] = goldenPair('mandel_213x121_odd');
    await assert.rejects(run(ref, dis), (e) => e.code === 'E_INPUT_FORMAT' && /ciede/.test(e.message) && /213x121/.test(e.message));
  });

  it('refuses gray input with E_INPUT_FORMAT', async () => {
    const gray = writeGray(join(tmp, 'gray.y4m'), 64, 48, 8);
    await assert.rejects(run(gray, gray), (e) => e.code === 'E_INPUT_FORMAT' && /4:0:0/.test(e.message));
  });
});
