import assert from 'node:assert/strict';
import { Readable } from 'node:stream';

import { FramePool, pooledFrame, bytesOf } from '../dist/pool/frame-pool.js';
import { Y4mReader } from '../dist/decode/y4m-reader.js';

const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Settles within `ms`? Resolves to 'pending' when it does not. */
async function within(promise, ms = 30) {
  return Promise.race([promise.then((v) => ({ value: v })), sleep(ms).then(() => 'pending')]);
}

describe('FramePool', () => {
  it('hands out typed buffers of the right size, allocating on demand', async () => {
    const p8 = new FramePool({ slots: 3, samples: 35, bitDepth: 8 });
    const p16 = new FramePool({ slots: 3, samples: 35, bitDepth: 10 });
    const a = await p8.acquire();
    const b = await p16.acquire();
    assert.ok(a instanceof Uint8Array);
    assert.ok(b instanceof Uint16Array);
    assert.equal(a.length, 35);
    assert.equal(b.length, 35);
    assert.equal(bytesOf(b).length, 70);
    assert.equal(p8.allocated, 1);
    assert.equal(p8.inUse, 1);
    assert.equal(p8.available, 2);
  });

  it('blocks acquire() when all slots are out and resumes on release, in FIFO order', async () => {
    const pool = new FramePool({ slots: 2, samples: 4, bitDepth: 8 });
    const a = await pool.acquire();
    const b = await pool.acquire();
    const order = [];
    const c = pool.acquire().then((buf) => (order.push('c'), buf));
    const d = pool.acquire().then((buf) => (order.push('d'), buf));
    await tick();
    assert.equal(await within(c), 'pending');
    assert.equal(pool.pending, 2);
    pool.release(b);
    const gotC = await c;
    assert.equal(gotC, b, 'the released buffer is reused');
    assert.equal(await within(d), 'pending');
    pool.release(a);
    assert.equal(await d, a);
    assert.deepEqual(order, ['c', 'd']);
    assert.equal(pool.allocated, 2, 'never more buffers than slots');
    assert.equal(pool.inUse, 2);
  });

  it('rejects a waiting acquire() when its signal aborts, and waiters when closed', async () => {
    const pool = new FramePool({ slots: 1, samples: 4, bitDepth: 8 });
    await pool.acquire();
    const ac = new AbortController();
    const waiting = pool.acquire(ac.signal);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.equal(pool.pending, 0);
    const other = pool.acquire();
    pool.close();
    await assert.rejects(other);
    await assert.rejects(pool.acquire());
  });

  it('throws on a double release of a buffer; a Frame release is idempotent', async () => {
    const pool = new FramePool({ slots: 1, samples: 4, bitDepth: 8 });
    const buf = await pool.acquire();
    pool.release(buf);
    assert.throws(() => pool.release(buf), /not out/);
    const luma = await pool.acquire();
    const frame = pooledFrame(pool, luma, 0, { width: 2, height: 2, bitDepth: 8, chroma: '420' }, 0.5);
    assert.equal(frame.pts, 0.5);
    frame.release();
    frame.release();
    assert.equal(pool.inUse, 0);
  });

  it('validates its options', () => {
    assert.throws(() => new FramePool({ slots: 0, samples: 4, bitDepth: 8 }), RangeError);
    assert.throws(() => new FramePool({ slots: 1, samples: 0, bitDepth: 8 }), RangeError);
    assert.throws(() => new FramePool({ slots: 1, samples: 4, bitDepth: 9 }), RangeError);
  });

  it('bounds a reader: it stops pulling input while all slots are out, and resumes on release', async () => {
    const W = 640;
    const H = 480;
    const frameBytes = W * H * 1.5;
    const total = 60;
    let produced = 0;
    const header = Buffer.from(`YUV4MPEG2 W${W} H${H} F25:1 C420jpeg\n`);
    const frame = Buffer.concat([Buffer.from('FRAME\n'), Buffer.alloc(frameBytes, 7)]);
    const stream = new Readable({
      read() {
        if (produced === 0) this.push(header);
        if (produced >= total) {
          this.push(null);
          return;
        }
        produced++;
        this.push(frame);
      },
    });
    const source = new Y4mReader(stream, { label: 'generated', poolSlots: 2 });
    const it = source[Symbol.asyncIterator]();
    const f0 = (await it.next()).value;
    const f1 = (await it.next()).value;
    const third = it.next();
    await sleep(50);
    assert.equal(await within(third), 'pending', 'the reader waits for a slot');
    // 2 frames out + about 1 MiB of read-ahead + the stream's own buffer: far from all 60.
    assert.ok(produced <= 2 + Math.ceil((1 << 20) / frameBytes) + 3, `produced ${produced} frames while blocked`);
    f0.release();
    const f2 = (await third).value;
    assert.equal(f2.index, 2);
    f1.release();
    f2.release();
    let n = 3;
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      n++;
      r.value.release();
    }
    assert.equal(n, total);
    await source.close();
  });
});
