/**
 * Drops the module-scope declarations of a WGSL source that one entry point cannot reach.
 *
 * Kernels include whole libraries (lib/f64.wgsl, lib/i64.wgsl: tens of KiB) and often hold
 * several entry points, and Dawn parses and validates every declaration of a shader module
 * when it is created, on the calling thread: at start-up that was most of the time spent
 * compiling pipelines. What an entry point cannot reach changes nothing it computes, and
 * WebGPU's 'auto' layout holds only the bindings the entry point uses, so the pruned module
 * gives the same pipeline.
 *
 * The reachability is by name and over-approximates: any identifier in a kept declaration
 * (a local that shadows a module-scope name included) keeps that declaration. Directives
 * (enable, requires, diagnostic, const_assert) and the overrides a pipeline sets are always
 * kept. A source this scanner cannot split, or without the entry point, comes back as it was,
 * so Dawn reports its errors as before.
 */

interface Declaration {
  text: string;
  /** The name it declares; undefined for a directive. */
  name: string | undefined;
  /** Every identifier in it: found when the declaration is first reached (usesOf). */
  uses: Set<string> | undefined;
}

/** d's identifiers; only the declarations an entry point reaches are ever scanned for them. */
function usesOf(d: Declaration): Set<string> {
  d.uses ??= new Set(d.text.match(IDENTIFIER));
  return d.uses;
}

const DECLARED = /^(?:@[A-Za-z_]\w*(?:\s*\([^)]*\))?\s*)*(?:fn|struct|alias|const|override|var(?:\s*<[^>]*>)?|let)\s+([A-Za-z_]\w*)/;
const DIRECTIVE = /^(?:enable|requires|diagnostic|const_assert)\b/;
const IDENTIFIER = /[A-Za-z_]\w*/g;

/** The source without comments (WGSL block comments nest); undefined if one never ends. */
function stripComments(code: string): string | undefined {
  const kept: string[] = [];
  let from = 0;
  // The next of each kind, searched again only once passed (else each search rescans the rest).
  let line = -1;
  let block = -1;
  for (;;) {
    if (line !== -2 && line < from) line = code.indexOf('//', from);
    if (block !== -2 && block < from) block = code.indexOf('/*', from);
    if (line === -1) line = -2;
    if (block === -1) block = -2;
    if (line < 0 && block < 0) break;
    if (block < 0 || (line >= 0 && line < block)) {
      kept.push(code.slice(from, line));
      const end = code.indexOf('\n', line);
      from = end < 0 ? code.length : end;
      continue;
    }
    kept.push(code.slice(from, block), ' ');
    let depth = 1;
    let i = block + 2;
    while (depth > 0) {
      const open = code.indexOf('/*', i);
      const close = code.indexOf('*/', i);
      if (close < 0) return undefined;
      if (open >= 0 && open < close) {
        depth++;
        i = open + 2;
      } else {
        depth--;
        i = close + 2;
      }
    }
    from = i;
  }
  kept.push(code.slice(from));
  return kept.join('');
}

/** The characters that open, close or end a declaration. */
const STRUCTURE = /[()[\]{};]/g;
/** The next character above ' ' (what follows a closing brace). */
const NOT_SPACE = /[^\x00-\x20]/g;

/** Module-scope declarations in order, or undefined where the brackets do not balance. */
function declarations(code: string): Declaration[] | undefined {
  const out: Declaration[] = [];
  let depth = 0;
  let start = 0;
  let braced = false;
  const close = (end: number): void => {
    const text = code.slice(start, end).trim();
    start = end;
    braced = false;
    if (text.length === 0 || text === ';') return;
    const name = DIRECTIVE.test(text) ? undefined : DECLARED.exec(text)?.[1];
    out.push({ text, name, uses: undefined });
  };
  // The regex steps from one bracket or ';' to the next: at start-up this runs before the
  // code is optimised, where a loop over every character of a kernel and its libraries
  // (hundreds of KiB in all) took tens of milliseconds on the way to the first frame.
  STRUCTURE.lastIndex = 0;
  for (let m = STRUCTURE.exec(code); m !== null; m = STRUCTURE.exec(code)) {
    const i = m.index;
    const c = code.charCodeAt(i);
    if (c === OPEN_PAREN || c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (c === OPEN_BRACE && depth === 0) braced = true;
      depth++;
    } else if (c === CLOSE_PAREN || c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
      if (depth < 0) return undefined;
      if (c === CLOSE_BRACE && depth === 0 && braced) {
        // A function or struct body ends the declaration (a struct may add a ';').
        NOT_SPACE.lastIndex = i + 1;
        const next = NOT_SPACE.exec(code);
        const end = next !== null && code.charCodeAt(next.index) === SEMICOLON ? next.index + 1 : i + 1;
        close(end);
        STRUCTURE.lastIndex = end;
      }
    } else if (depth === 0) {
      close(i + 1); // ';'
    }
  }
  if (depth !== 0) return undefined;
  if (code.slice(start).trim().length > 0) return undefined;
  return out;
}

const [OPEN_PAREN, CLOSE_PAREN, OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE, CLOSE_BRACE, SEMICOLON] =
  ['(', ')', '[', ']', '{', '}', ';'].map((c) => c.charCodeAt(0)) as [number, number, number, number, number, number, number];

// A source is often compiled once per entry point (ssim, cambi): split it once.
const parsed = new Map<string, Declaration[] | undefined>();
const PARSED_KEPT = 64;

function parse(code: string): Declaration[] | undefined {
  if (parsed.has(code)) return parsed.get(code);
  const bare = stripComments(code);
  const decls = bare === undefined ? undefined : declarations(bare);
  if (parsed.size >= PARSED_KEPT) parsed.clear();
  parsed.set(code, decls);
  return decls;
}

/**
 * `code` with only what `entryPoint` reaches (and the overrides named in `constants`);
 * `code` itself where it cannot be split or has no such entry point.
 */
export function pruneWgsl(code: string, entryPoint: string, constants: readonly string[] = []): string {
  const decls = parse(code);
  if (!decls) return code;
  const byName = new Map<string, Declaration>();
  for (const d of decls) if (d.name !== undefined) byName.set(d.name, d);
  const entry = byName.get(entryPoint);
  if (!entry || !/^(?:@[A-Za-z_]\w*(?:\s*\([^)]*\))?\s*)*fn\s/.test(entry.text)) return code;

  const kept = new Set<Declaration>();
  const pending: Declaration[] = [entry];
  for (const name of constants) {
    const d = byName.get(name);
    if (d) pending.push(d);
  }
  for (const d of decls) if (d.name === undefined) pending.push(d);
  while (pending.length > 0) {
    const d = pending.pop()!;
    if (kept.has(d)) continue;
    kept.add(d);
    for (const id of usesOf(d)) {
      const used = byName.get(id);
      if (used && !kept.has(used)) pending.push(used);
    }
  }
  return decls.filter((d) => kept.has(d)).map((d) => d.text).join('\n');
}
