/**
 * compiledChild prepares a bench child to run as plain JavaScript, the way a user's process
 * runs baton: no tsx loader, no esbuild keep-names `__name` wrappers. Under tsx a 1-lease child
 * is ~83 MB RSS and every class-field arrow function gets a property table; a deployment pays
 * neither, so CPU or RSS measured under tsx is not what users get.
 *
 * How: the project's own compiler (`tsc`, with tsconfig.json's options, as `npm run build`)
 * compiles the child script and everything it imports — its bench helpers and the library's
 * src/ files — into node_modules/.cache/baton-bench/, mirroring the repository's layout. The
 * library part is what dist/ holds after a build, compiled fresh from src/, so it is never
 * stale. Bare imports (better-sqlite3, ioredis) resolve through the repository's node_modules.
 * If the compile fails the caller runs the child from src under tsx and says why.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'node_modules', '.cache', 'baton-bench');

/** CompiledChild says how a child script will run: its JS entry, or why it runs under tsx. */
export type CompiledChild = { runtime: 'compiled'; entry: string } | { runtime: 'tsx'; why: string };

/** compiledChild compiles bench/`script` (a .ts file) and its imports to JS, or says why it could not. */
export function compiledChild(script: string): CompiledChild {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const config = {
    extends: join(ROOT, 'tsconfig.json'),
    compilerOptions: { rootDir: ROOT, outDir: join(OUT, 'js'), declaration: false, sourceMap: false, noEmit: false },
    include: [],
    files: [join(ROOT, 'bench', script)],
  };
  writeFileSync(join(OUT, 'tsconfig.json'), JSON.stringify(config));
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(OUT, 'tsconfig.json')], { encoding: 'utf8' });
  const entry = join(OUT, 'js', 'bench', script.replace(/\.ts$/, '.js'));
  if (tsc.status !== 0 || !existsSync(entry)) {
    const first = `${tsc.stdout ?? ''}${tsc.stderr ?? ''}`.trim().split('\n')[0] ?? '';
    return { runtime: 'tsx', why: `tsc could not compile bench/${script} (exit ${tsc.status}${first ? `: ${first}` : ''})` };
  }
  return { runtime: 'compiled', entry };
}
