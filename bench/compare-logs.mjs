#!/usr/bin/env node
// Per-key parity of two libvmaf-format JSON logs (ours and libvmaf's, both at full precision:
// our --precision 17, libvmaf's build printing %.17g): for each metric both logs carry, how
// many per-frame values are exactly equal and the largest |difference|.
//   node bench/compare-logs.mjs OURS.json LIBVMAF.json   -> one JSON line
import { readFileSync } from 'node:fs';

const [oursPath, theirsPath] = process.argv.slice(2);
if (!oursPath || !theirsPath) {
  console.error('usage: compare-logs.mjs OURS.json LIBVMAF.json');
  process.exit(2);
}
const ours = JSON.parse(readFileSync(oursPath, 'utf8')).frames;
const theirs = JSON.parse(readFileSync(theirsPath, 'utf8')).frames;
const keys = {};
let equal = 0, total = 0;
for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
  for (const [key, value] of Object.entries(theirs[i].metrics)) {
    if (!(key in ours[i].metrics)) continue;
    const diff = Math.abs(ours[i].metrics[key] - value);
    const k = (keys[key] ??= { equal: 0, total: 0, maxAbsDiff: 0 });
    k.total++; total++;
    if (diff === 0) { k.equal++; equal++; }
    k.maxAbsDiff = Math.max(k.maxAbsDiff, diff);
  }
}
console.log(JSON.stringify({ ours: oursPath, libvmaf: theirsPath, frames: [ours.length, theirs.length], equal, total, keys }));
