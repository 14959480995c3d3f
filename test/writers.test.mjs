// Log writers: byte-identical to libvmaf 3.2.0's logs, streamed, with printf-exact numbers.
import assert from 'node:assert/strict';
import { goldenClip } from './helpers/golden.mjs';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  createLogWriter,
  formatFixed,
  formatGeneral,
  formatNumber,
  libvmafLeadingZeros,
} from '../dist/pipeline/writers/index.js';
import { UsageError, VmafError } from '../dist/errors.js';

const fixtures = fileURLToPath(new URL('./fixtures/writers/', import.meta.url));
const read = (name) => readFileSync(fixtures + name, 'utf8');

/** Collects what is written; `chunks` shows what arrived when. */
class Collector extends Writable {
  constructor(options) {
    super(options);
    this.chunks = [];
  }
  _write(chunk, _encoding, callback) {
    this.chunks.push(chunk.toString('utf8'));
    callback();
  }
  get text() {
    return this.chunks.join('');
  }
}

/** The frames and summary of a libvmaf JSON log printed at %.17g: exact doubles. */
function runFromLog(text, scoreNames) {
  const log = JSON.parse(text);
  const frames = log.frames.map((frame) => {
    const features = {};
    const scores = {};
    for (const [name, value] of Object.entries(frame.metrics)) (scoreNames.includes(name) ? scores : features)[name] = value;
    return { index: frame.frameNum, features, scores };
  });
  const summary = {
    version: log.version,
    fps: log.fps,
    frameCount: frames.length,
    pooled: log.pooled_metrics,
    aggregate: log.aggregate_metrics,
  };
  return { frames, summary, fps: log.fps };
}

async function render(format, run, options = {}) {
  const out = new Collector();
  const writer = createLogWriter(format, out, options);
  for (const frame of run.frames) writer.writeFrame(frame);
  await writer.end(run.summary);
  return out.text;
}

/** The fps libvmaf measured, read back from one of its logs. */
function fpsOf(text) {
  const m = /"fps": ([0-9.]+|null)|<fyi fps="([^"]*)"/.exec(text);
  return m ? Number(m[1] ?? m[2]) : undefined;
}

const run = runFromLog(read('src01_160x90_10f.p17.json'), ['vmaf']);

describe('writers: printf-compatible numbers', () => {
  // Columns: bits, %.Nf for N = 0,1,2,6,16,17,20, %.Ng for N = 0,1,2,6,15,16,17,20,
  // count_leading_zeros_d; made by glibc's printf (fixtures/writers/printf-vectors.c).
  const fixed = [0, 1, 2, 6, 16, 17, 20];
  const general = [0, 1, 2, 6, 15, 16, 17, 20];
  const view = new DataView(new ArrayBuffer(8));
  const rows = read('printf-vectors.tsv').trim().split('\n').map((line) => line.split('\t'));

  it(`matches glibc printf on ${rows.length} edge-case doubles (%f, %g, NaN, inf, ties, subnormals)`, () => {
    for (const [hex, ...expected] of rows) {
      view.setBigUint64(0, BigInt('0x' + hex));
      const x = view.getFloat64(0);
      if (Number.isNaN(x)) continue; // the sign of a NaN isn't kept through JS; see below
      const got = [
        ...fixed.map((d) => formatFixed(x, d)),
        ...general.map((p) => formatGeneral(x, p)),
        String(libvmafLeadingZeros(x)),
      ];
      assert.deepEqual(got, expected, `value ${hex} (${x})`);
    }
  });

  it('prints non-finite values as glibc does', () => {
    assert.equal(formatFixed(Number.NaN, 6), 'nan');
    assert.equal(formatGeneral(Number.NaN, 17), 'nan');
    const negativeNaN = new Float64Array(new BigUint64Array([0xfff8000000000000n]).buffer)[0];
    assert.equal(formatFixed(negativeNaN, 6), '-nan');
    assert.equal(formatFixed(Infinity, 6), 'inf');
    assert.equal(formatFixed(-Infinity, 16), '-inf');
    assert.equal(formatGeneral(-Infinity, 17), '-inf');
    assert.equal(formatNumber(Infinity, undefined), 'inf');
  });

  it('rounds exact ties to even like glibc (not up like toFixed)', () => {
    assert.equal(formatFixed(0.0078125, 6), '0.007812'); // (0.0078125).toFixed(6) is 0.007813
    assert.equal(formatFixed(2.5, 0), '2');
    assert.equal(formatFixed(3.5, 0), '4');
    assert.equal(formatFixed(-0.125, 2), '-0.12');
    assert.equal(formatGeneral(0.125, 2), '0.12');
    assert.equal(formatGeneral(125, 2), '1.2e+02');
    assert.equal(formatGeneral(9.5, 1), '1e+01');
  });

  it('%.17g round-trips and uses two-digit exponents', () => {
    assert.equal(formatNumber(1e-5, 17), '1.0000000000000001e-05');
    assert.equal(formatNumber(0.1, 17), '0.10000000000000001');
    assert.equal(formatNumber(0, 17), '0');
    assert.equal(formatNumber(-0, 17), '-0');
    assert.equal(formatNumber(1e20, 17), '1e+20');
    assert.equal(formatNumber(1e100, 17), '1e+100');
    assert.equal(formatNumber(93.913916764164696, 17), '93.913916764164696');
    assert.equal(formatNumber(0.0001, 17), '0.0001');
    assert.equal(formatNumber(5e-324, 17), '4.9406564584124654e-324');
    for (const x of [Math.PI, 1 / 3, 2 ** -30, 123456789.123, 1.7976931348623157e308, 5e-324]) {
      assert.equal(Number(formatNumber(x, 17)), x);
    }
  });

  it("undefined precision is libvmaf's rule: %.6f, or %.16f past 6 leading zeros", () => {
    assert.equal(formatNumber(0.0010924300506851934, undefined), '0.001092');
    assert.equal(formatNumber(0, undefined), '0.000000');
    assert.equal(formatNumber(-0, undefined), '-0.000000');
    assert.equal(formatNumber(93.913916764164696, undefined), '93.913917');
    assert.equal(formatNumber(1e-6, undefined), '0.000001'); // 6 leading zeros
    assert.equal(formatNumber(1e-7, undefined), '0.0000001000000000');
    assert.equal(formatNumber(-3e-9, undefined), '-0.0000000030000000');
    assert.equal(formatNumber(12.00000001, undefined), '12.0000000100000008');
    assert.equal(formatNumber(1e-20, undefined), '0.0000000000000000');
    // Past INT_MAX libvmaf's (int) cast yields INT_MIN on x86-64, so the count is 0 even
    // though the fraction (2^-21) has 6 leading zeros: %.6f (checked against gcc).
    assert.equal(formatNumber(3e9 + 2 ** -21, undefined), '3000000000.000000');
    assert.equal(libvmafLeadingZeros(3e9 + 2 ** -21), 0);
    assert.equal(libvmafLeadingZeros(2 ** -21), 7);
  });
});

describe('writers: byte-identical to libvmaf 3.2.0', () => {
  for (const format of ['json', 'xml', 'csv', 'sub']) {
    for (const [label, precision, fixture] of [
      ['default precision', undefined, 'stock'],
      ['precision 17', 17, 'p17'],
    ]) {
      it(`${format}, ${label}`, async () => {
        const expected = read(`src01_160x90_10f.${fixture}.${format}`);
        const text = await render(format, run, {
          precision,
          version: '3.2.0',
          width: 160,
          height: 90,
          fps: fpsOf(expected), // timing: taken from libvmaf's log so the bytes compare
        });
        assert.equal(text, expected);
      });
    }
  }

  it('without an fps option the header says what libvmaf says for an unknown fps', async () => {
    const json = await render('json', run, { version: '3.2.0' });
    assert.match(json, /^\{\n  "version": "3\.2\.0",\n  "fps": null,\n  "frames": \[\n/);
    JSON.parse(json);
    const xml = await render('xml', run, { version: '3.2.0', width: 160, height: 90 });
    assert.match(xml, /<fyi fps="nan" \/>/);
  });

  it('the full golden log (48 frames, 3 models) at precision 17', async () => {
    const expected = goldenClip('src01_160x90_8bit').logText();
    const full = runFromLog(expected, ['vmaf', 'vmaf_neg', 'vmaf_4k']);
    const text = await render('json', full, { precision: 17, version: '3.2.0', fps: fpsOf(expected) });
    assert.equal(text, expected);
  });
});

describe('writers: streaming', () => {
  for (const format of ['json', 'xml', 'csv', 'sub', 'ndjson']) {
    it(`${format}: each frame is written before end()`, async () => {
      const out = new Collector();
      const writer = createLogWriter(format, out, { version: '3.2.0' });
      for (const frame of run.frames.slice(0, 3)) {
        const before = out.text.length;
        writer.writeFrame(frame);
        await new Promise((resolve) => setImmediate(resolve));
        assert.ok(out.text.length > before, 'frame written at once');
        const marker = {
          json: `"frameNum": ${frame.index},`,
          xml: `<frame frameNum="${frame.index}" `,
          csv: `\n${frame.index},`,
          sub: `frame: ${frame.index}|`,
          ndjson: `{"frameNum":${frame.index},`,
        }[format];
        assert.ok(out.text.includes(marker), `frame ${frame.index} is out`);
      }
      assert.equal(out.writableEnded, false);
      await writer.end({ ...run.summary, frameCount: 3 });
      assert.equal(out.writableFinished, true, 'a stream of ours is ended');
    });
  }

  it('ndjson: one parseable line per frame, then a summary line', async () => {
    const out = new Collector();
    const writer = createLogWriter('ndjson', out, { precision: 17 });
    const frames = run.frames.map((frame, i) => ({ ...frame, refPts: i / 24, disPts: i === 1 ? undefined : i / 24 }));
    for (const [i, frame] of frames.entries()) {
      writer.writeFrame(frame);
      await new Promise((resolve) => setImmediate(resolve));
      const lines = out.text.split('\n');
      assert.equal(lines.length, i + 2, 'complete lines only');
      assert.equal(lines.at(-1), '');
      const line = JSON.parse(lines.at(-2));
      assert.deepEqual(Object.keys(line), i === 1 ? ['frameNum', 'refPts', 'metrics'] : ['frameNum', 'refPts', 'disPts', 'metrics']);
      assert.equal(line.frameNum, frame.index);
      assert.equal(line.refPts, frame.refPts);
      assert.deepEqual(line.metrics, { ...frame.features, ...frame.scores }); // %.17g: exact
      assert.deepEqual(Object.keys(line.metrics), Object.keys(frame.features).concat(Object.keys(frame.scores)));
    }
    await writer.end({ ...run.summary, version: '0.1.0', fps: 123.456 });
    const lines = out.text.trimEnd().split('\n');
    assert.equal(lines.length, frames.length + 1);
    const summary = JSON.parse(lines.at(-1));
    assert.deepEqual(summary, {
      version: '0.1.0',
      fps: 123.46,
      frameCount: frames.length,
      pooled_metrics: run.summary.pooled,
      aggregate_metrics: {},
    });
  });

  it('ndjson: default precision, non-finite values as null', async () => {
    const out = new Collector();
    const writer = createLogWriter('ndjson', out);
    writer.writeFrame({ index: 7, features: { a: 0.0010924300506851934, b: Number.NaN }, scores: { vmaf: Infinity } });
    await writer.end({ version: 'x', fps: Number.NaN, frameCount: 1, pooled: {} });
    assert.equal(
      out.text,
      '{"frameNum":7,"metrics":{"a":0.001092,"b":null,"vmaf":null}}\n' +
        '{"version":"x","fps":null,"frameCount":1,"pooled_metrics":{},"aggregate_metrics":{}}\n',
    );
  });

  it('respects backpressure: writeFrame returns false, ready() waits for drain, end() for the flush', async () => {
    const received = [];
    const out = new Writable({
      highWaterMark: 64,
      write(chunk, _encoding, callback) {
        setTimeout(() => {
          received.push(chunk.toString());
          callback();
        }, 5);
      },
    });
    const writer = createLogWriter('csv', out, { end: false });
    let sawFalse = false;
    for (const frame of run.frames) {
      if (!writer.writeFrame(frame)) {
        sawFalse = true;
        assert.ok(out.writableLength > 0);
        await writer.ready();
        assert.equal(out.writableLength, 0);
      }
    }
    assert.ok(sawFalse, 'the small buffer filled up');
    await writer.end(run.summary);
    assert.equal(out.writableEnded, false, 'end: false leaves the stream open');
    assert.equal(received.join(''), read('src01_160x90_10f.stock.csv'));
  });

  it('a file stream is ended and its file complete when end() resolves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmaf-writers-'));
    try {
      const path = join(dir, 'log.xml');
      const out = createWriteStream(path);
      const expected = read('src01_160x90_10f.stock.xml');
      const writer = createLogWriter('xml', out, { version: '3.2.0', width: 160, height: 90, fps: fpsOf(expected) });
      for (const frame of run.frames) if (!writer.writeFrame(frame)) await writer.ready();
      await writer.end(run.summary);
      assert.equal(out.closed, true);
      assert.equal(readFileSync(path, 'utf8'), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never ends process.stdout by default', async () => {
    // A closed stdout would end the test run's output; just check the choice of default.
    const writer = createLogWriter('sub', process.stdout);
    await writer.end({ version: 'x', fps: 0, frameCount: 0, pooled: {} }); // sub writes nothing here
    assert.equal(process.stdout.writableEnded, false);
  });

  it('an output error becomes VmafError E_OUTPUT', async () => {
    const out = new Writable({
      write(_chunk, _encoding, callback) {
        callback(new Error('disk full'));
      },
    });
    const writer = createLogWriter('json', out, { label: 'x.json' });
    writer.writeFrame(run.frames[0]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.throws(() => writer.writeFrame(run.frames[1]), (error) => error instanceof VmafError && error.code === 'E_OUTPUT' && /x\.json: cannot write the log: disk full/.test(error.message));
    await assert.rejects(writer.ready(), { code: 'E_OUTPUT' });
    await assert.rejects(writer.end(run.summary), { code: 'E_OUTPUT' });
  });

  it('rejects bad options and misuse', async () => {
    for (const precision of [0, 18, 1.5, Number.NaN]) {
      assert.throws(() => createLogWriter('json', new Collector(), { precision }), UsageError);
    }
    assert.throws(() => createLogWriter('yaml', new Collector()), UsageError);
    const writer = createLogWriter('csv', new Collector());
    await writer.end(run.summary);
    assert.throws(() => writer.writeFrame(run.frames[0]), { code: 'E_OUTPUT' });
    await assert.rejects(writer.end(run.summary), { code: 'E_OUTPUT' });
  });
});

describe('writers: edge cases', () => {
  const summary = { version: '0.1.0', fps: 10, frameCount: 0, pooled: {} };

  it('no frames: libvmaf-shaped empty logs', async () => {
    assert.equal(
      await render('json', { frames: [], summary }, { version: '3.2.0', fps: 1 }),
      '{\n  "version": "3.2.0",\n  "fps": 1.00,\n  "frames": [\n  ],\n  "pooled_metrics": {\n  },\n  "aggregate_metrics": {\n  }\n}\n',
    );
    assert.equal(
      await render('xml', { frames: [], summary }, { version: '3.2.0', fps: 1, width: 2, height: 3 }),
      '<VMAF version="3.2.0">\n  <params qualityWidth="2" qualityHeight="3" />\n  <fyi fps="1.00" />\n  <frames>\n' +
        '  </frames>\n  <pooled_metrics>\n  </pooled_metrics>\n  <aggregate_metrics />\n</VMAF>\n',
    );
    const pooled = { vmaf: { min: 1, max: 2, mean: 1.5, harmonic_mean: 1.4 } };
    assert.equal(await render('csv', { frames: [], summary: { ...summary, pooled } }), 'Frame,vmaf,\n');
    assert.equal(await render('sub', { frames: [], summary }), '');
  });

  it("non-finite values print as libvmaf prints them (JSON's null without its newline)", async () => {
    const frames = [{ index: 0, features: { a: Number.NaN, b: 1 }, scores: { vmaf: Infinity } }];
    const pooled = { a: { min: Number.NaN, max: 1, mean: 1, harmonic_mean: -Infinity } };
    const text = await render('json', { frames, summary: { ...summary, pooled, aggregate: { x: Number.NaN, y: 2 } } }, { version: 'v', fps: 1 });
    assert.equal(
      text,
      '{\n  "version": "v",\n  "fps": 1.00,\n  "frames": [\n    {\n      "frameNum": 0,\n      "metrics": {\n' +
        '        "a": null,        "b": 1.000000,\n        "vmaf": null      }\n    }\n  ],\n' +
        '  "pooled_metrics": {\n    "a": {\n      "min": null,\n      "max": 1.000000,\n      "mean": 1.000000,\n      "harmonic_mean": null\n    }\n  },\n' +
        '  "aggregate_metrics": {\n    "x": null,\n    "y": 2.000000\n  }\n}\n',
    );
    JSON.parse(text);
    assert.equal(await render('csv', { frames, summary }), 'Frame,a,b,vmaf,\n0,nan,1.000000,inf,\n');
    assert.equal(await render('sub', { frames, summary }), '{0}{1}frame: 0|a: nan|b: 1.000000|vmaf: inf|\n');
    assert.match(await render('xml', { frames, summary }, { version: 'v', fps: 1 }), /<frame frameNum="0" a="nan" b="1.000000" vmaf="inf" \/>/);
  });

  it('csv keeps the first frame columns; a missing value is an empty field', async () => {
    const frames = [
      { index: 0, features: { a: 1, b: 2 }, scores: { vmaf: 3 } },
      { index: 1, features: { a: 4, c: 5 }, scores: { vmaf: 6 } },
    ];
    assert.equal(await render('csv', { frames, summary }, { precision: 3 }), 'Frame,a,b,vmaf,\n0,1,2,3,\n1,4,,6,\n');
  });

  it('names that need quoting are escaped where they are quoted', async () => {
    const frames = [{ index: 0, features: { 'a"b': 1 }, scores: {} }];
    const pooled = { 'a"b': { min: 1, max: 1, mean: 1, harmonic_mean: 1 } };
    const json = await render('json', { frames, summary: { ...summary, pooled } }, { version: 'v<1>' });
    assert.deepEqual(Object.keys(JSON.parse(json).frames[0].metrics), ['a"b']);
    const xml = await render('xml', { frames, summary: { ...summary, pooled } }, { version: 'v<1>' });
    assert.match(xml, /<VMAF version="v&lt;1&gt;">/);
    assert.match(xml, /<metric name="a&quot;b" /);
    assert.equal(await render('csv', { frames: [{ index: 0, features: { 'x,y': 1 }, scores: {} }], summary }), 'Frame,"x,y",\n0,1.000000,\n');
  });
});
