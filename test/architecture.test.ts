/**
 * Dependency direction, checked on the source: the core never imports a store, and a store
 * imports from the core only the contract (store, descriptor, errors) and the small utilities
 * named below. A store written outside this package can reach all of these through the
 * package's public exports.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const CORE_FILES_STORES_MAY_USE = ['store.ts', 'store-descriptor.ts', 'errors.ts', 'duration.ts', 'metadata-json.ts', 'clock.ts'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** importsOf returns the repository-relative targets of a file's relative imports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.[^'"]+)['"]/g)) {
    out.push(relative(root, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
  }
  return out;
}

describe('architecture', () => {
  it('src/core imports nothing from src/stores', () => {
    const bad = files(join(root, 'src/core')).flatMap((f) => importsOf(f).filter((t) => t.startsWith('src/stores/')).map((t) => `${relative(root, f)} → ${t}`));
    assert.deepEqual(bad, []);
  });

  it('stores import from src/core only the contract and its utilities', () => {
    const allowed = new Set(CORE_FILES_STORES_MAY_USE.map((f) => `src/core/${f}`));
    const bad = files(join(root, 'src/stores')).flatMap((f) =>
      importsOf(f)
        .filter((t) => t.startsWith('src/') && !t.startsWith('src/stores/') && !allowed.has(t))
        .map((t) => `${relative(root, f)} → ${t}`),
    );
    assert.deepEqual(bad, []);
  });

  it('a store folder imports no other store folder (only the kit)', () => {
    const bad = files(join(root, 'src/stores')).flatMap((f) => {
      const own = relative(root, f).split('/')[2];
      return importsOf(f)
        .filter((t) => t.startsWith('src/stores/') && t.split('/').length > 3)
        .filter((t) => {
          const other = t.split('/')[2];
          return other !== own && other !== 'kit' && !relative(root, f).startsWith('src/stores/registry');
        })
        .map((t) => `${relative(root, f)} → ${t}`);
    });
    assert.deepEqual(bad, []);
  });

  it('the library folders import nothing from the CLI (the CLI maps their outcomes to exit codes)', () => {
    const bad = ['src/aws', 'src/core', 'src/jobs', 'src/shards', 'src/stores'].flatMap((dir) =>
      files(join(root, dir)).flatMap((f) => importsOf(f).filter((t) => t.startsWith('src/cli/')).map((t) => `${relative(root, f)} → ${t}`)),
    );
    assert.deepEqual(bad, []);
  });

  it('the check itself sees imports (it would catch one)', () => {
    assert.ok(importsOf(join(root, 'src/stores/registry.ts')).includes('src/stores/redis/descriptor.ts'));
  });
});
