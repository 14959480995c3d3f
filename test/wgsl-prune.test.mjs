// pruneWgsl keeps what an entry point reaches and nothing else; the gpu tests prove the
// pruned kernels compute what they did (every kernel is compiled through it).
import assert from 'node:assert/strict';

import { pruneWgsl } from '../dist/kernels/gpu/wgsl-prune.js';
import { loadWgsl } from '../dist/kernels/gpu/wgsl.js';

const SOURCE = `
enable f16;
// a comment with fn unused() {}
/* a block /* nested */ comment */
struct Pair { a: u32, b: u32 };
alias Word = u32;
const SCALE: Word = 3u;
const UNUSED_CONST = 7u;
override WIDTH: u32;
override OTHER: u32 = 1u;
@group(0) @binding(0) var<storage, read_write> out: array<Pair>;
@group(0) @binding(1) var<storage, read> unusedInput: array<u32>;
fn helper(x: u32) -> u32 { return x * SCALE; }
fn unusedHelper(x: u32) -> u32 { return x + UNUSED_CONST; }
fn twice(x: u32) -> u32 { if (x > 0u) { return helper(x) * 2u; } return 0u; }
@compute @workgroup_size(64, 1, 1) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < WIDTH) { out[id.x] = Pair(twice(id.x), 0u); }
}
@compute @workgroup_size(8) fn other() { out[0].a = unusedHelper(OTHER) + unusedInput[0]; }
`;

const declared = (code) => new Set([...code.matchAll(/\b(?:fn|struct|alias|const|override|var(?:<[^>]*>)?)\s+([A-Za-z_]\w*)/g)].map((m) => m[1]));

describe('pruneWgsl', () => {
  it('keeps the entry point, what it reaches, directives and set overrides; drops the rest', () => {
    const names = declared(pruneWgsl(SOURCE, 'main'));
    assert.deepEqual([...names].sort(), ['Pair', 'SCALE', 'WIDTH', 'Word', 'helper', 'main', 'out', 'twice']);
    assert.match(pruneWgsl(SOURCE, 'main'), /^enable f16;/);
    const withOverride = declared(pruneWgsl(SOURCE, 'main', ['OTHER']));
    assert.ok(withOverride.has('OTHER') && !withOverride.has('other'));
  });

  it('splits at the ends of bodies and statements exactly: a struct keeps a ";" after blank space, a module-scope array constant is one declaration', () => {
    const code = 'struct A { x: u32 }\n  ;\nfn f() -> u32 { return 1u; }   \n@compute @workgroup_size(1) fn main() { let a = A(f()); }\nconst Z = array<u32, 2>(1u, 2u);';
    assert.equal(pruneWgsl(code, 'main'), 'struct A { x: u32 }\n  ;\nfn f() -> u32 { return 1u; }\n@compute @workgroup_size(1) fn main() { let a = A(f()); }');
  });

  it('prunes per entry point', () => {
    const names = declared(pruneWgsl(SOURCE, 'other'));
    assert.deepEqual([...names].sort(), ['OTHER', 'Pair', 'UNUSED_CONST', 'other', 'out', 'unusedHelper', 'unusedInput']);
  });

  it('returns the source unchanged when it cannot split it or has no such entry point', () => {
    assert.equal(pruneWgsl(SOURCE, 'missing'), SOURCE);
    assert.equal(pruneWgsl(SOURCE, 'SCALE'), SOURCE); // names no function
    const unbalanced = 'fn main() { let x = 1;';
    assert.equal(pruneWgsl(unbalanced, 'main'), unbalanced);
    const openComment = '/* never closed fn main() {}';
    assert.equal(pruneWgsl(openComment, 'main'), openComment);
  });

  it('shrinks the library-heavy kernels', () => {
    const dwt0 = loadWgsl('adm/adm-dwt0.wgsl');
    const pruned = pruneWgsl(dwt0, 'main');
    assert.ok(pruned.length < dwt0.length / 2, `${pruned.length} of ${dwt0.length}`);
    assert.ok(declared(pruned).has('main'));
  });
});
