/**
 * The bind groups and uniforms a kernel makes as frames come, made once per key and reused:
 * a key names a pass and the buffers it binds this time (pictures and stats slots come from
 * rings, so a handful of keys recur). Keys name buffers by a small id per GPUBuffer.
 */

/** A uniform buffer of `bytes` (at least the words') holding `words`, zero-padded. */
export function uniformBuffer(device: GPUDevice, words: ArrayLike<number>, label: string, bytes = 4 * words.length): GPUBuffer {
  const b = device.createBuffer({ size: Math.max(bytes, 4 * words.length), usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label });
  new Uint32Array(b.getMappedRange()).set(words);
  b.unmap();
  return b;
}

/** A bind group's buffers by binding number: a whole buffer, or a range of one. */
export type Bindings = Record<number, GPUBuffer | GPUBufferBinding>;

export class BindGroupCache {
  readonly #device: GPUDevice;
  readonly #limit: number;
  readonly #groups = new Map<string, GPUBindGroup>();
  readonly #uniforms = new Map<string, GPUBuffer>();
  readonly #ids = new WeakMap<GPUBuffer, number>();
  #nextId = 0;

  /** Past `limit` groups the cache starts again: a stray caller's buffers are not kept forever. */
  constructor(device: GPUDevice, limit = 1024) {
    this.#device = device;
    this.#limit = limit;
  }

  /** A number naming `buffer` in keys, the same for the cache's life. */
  id(buffer: GPUBuffer): number {
    let id = this.#ids.get(buffer);
    if (id === undefined) this.#ids.set(buffer, (id = this.#nextId++));
    return id;
  }

  /** The bind group for `key`: `bindings` in group 0 of `pipeline`, bound the first time. */
  group(key: string, pipeline: GPUComputePipeline, label: string, bindings: Bindings): GPUBindGroup {
    let group = this.#groups.get(key);
    if (group) return group;
    const entries = Object.entries(bindings).map(([binding, r]): GPUBindGroupEntry => ({ binding: Number(binding), resource: 'buffer' in r ? r : { buffer: r } }));
    group = this.#device.createBindGroup({ label, layout: pipeline.getBindGroupLayout(0), entries });
    if (this.#groups.size >= this.#limit) this.#groups.clear();
    this.#groups.set(key, group);
    return group;
  }

  /** The uniform for `key` (see uniformBuffer), made the first time; destroy() frees it. */
  uniform(key: string, words: ArrayLike<number>, label: string, bytes?: number): GPUBuffer {
    let b = this.#uniforms.get(key);
    if (!b) this.#uniforms.set(key, (b = uniformBuffer(this.#device, words, label, bytes)));
    return b;
  }

  /** Frees the uniforms and forgets the groups. */
  destroy(): void {
    for (const b of this.#uniforms.values()) b.destroy();
    this.#uniforms.clear();
    this.#groups.clear();
  }
}
