// ffmpeg's own libvmaf filter, from the same ffmpeg binary, decoding the same mp4 files:
//   ffmpeg -i dis.mp4 -i ref.mp4 -lavfi libvmaf=model_path=M:n_threads=N -f null -
// The bundled ffmpeg (a 2018 static build) has libvmaf 1.x, which reads a .pkl model and a
// .pkl.model libsvm file; both are written here from our built-in vmaf_v0.6.1 JSON model
// (bench/lib/pkl.mjs). libvmaf 1.x computes float features, so its pooled score is close
// to ours (libvmaf 3.x integer features), not equal.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeLegacyModel } from '../lib/pkl.mjs';

function hasLibvmaf(ctx) {
  return ctx.ffmpegFilters().includes(' libvmaf ');
}

export default {
  name: 'ffmpeg',
  title: "ffmpeg's libvmaf filter (libvmaf 1.x, float features), same binary and inputs",
  available: (ctx) => hasLibvmaf(ctx) || `${ctx.ffmpegPath} has no libvmaf filter`,
  async run(ctx) {
    const { clip, threads, root } = ctx;
    const json = [join(root, 'dist/pipeline/model/builtin/vmaf_v0.6.1.json'), join(root, 'src/pipeline/model/builtin/vmaf_v0.6.1.json')].find(existsSync);
    const dir = join(ctx.cacheDir, 'model');
    mkdirSync(dir, { recursive: true });
    const pkl = writeLegacyModel(json, join(dir, 'vmaf_v0.6.1.pkl'));
    const args = ['-i', clip.disMp4, '-i', clip.refMp4, '-lavfi', `libvmaf=model_path=${pkl}:n_threads=${threads}`, '-f', 'null', '-'];
    const row = await ctx.ffmpegRow({ name: 'ffmpeg libvmaf 1.x, mp4', args, threads });
    const m = /VMAF score[:=]\s*([\d.]+)/.exec(row.detail.stderrTail);
    row.vmaf = m ? Number(m[1]) : null;
    return [row];
  },
};
