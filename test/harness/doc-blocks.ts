/**
 * Code blocks of the README and docs/, as tests read them: every fenced block with its language,
 * file, line and the HTML comments right above it (`<!-- readme-test: NAME -->` names a block a
 * test runs; `<!-- ts-context: … -->` declares what the reader's own code brings to a fragment,
 * such as `buildReport` or an `elector` made earlier, so the block can be type-checked as it is).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** DocBlock is one fenced code block of a Markdown file. */
export interface DocBlock {
  /** The file, relative to the repository root. */
  file: string;
  /** The 1-based line of the opening fence. */
  line: number;
  /** The fence's info string (`ts`, `sh`, …), or '' when it has none. */
  lang: string;
  code: string;
  /** The HTML comments on the lines right above the fence, innermost text only. */
  comments: string[];
}

/** docFiles lists README.md and every Markdown file under docs/, relative to root. */
export function docFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? walk(p) : p.endsWith('.md') ? [p] : [];
    });
  return ['README.md', ...walk(join(root, 'docs')).map((p) => relative(root, p)).sort()];
}

/** docBlocks returns the fenced blocks of one Markdown file. */
export function docBlocks(root: string, file: string): DocBlock[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    blocks.push({ file, line: i + 1, lang: open[1]!, code: lines.slice(i + 1, end).join('\n'), comments: commentsAbove(lines, i) });
    i = end;
  }
  return blocks;
}

/** commentsAbove collects the HTML comments that end on the lines just above line `i`. */
function commentsAbove(lines: string[], i: number): string[] {
  const found: string[] = [];
  let j = i - 1;
  while (j >= 0 && lines[j]!.trimEnd().endsWith('-->')) {
    let start = j;
    while (start >= 0 && !lines[start]!.includes('<!--')) start--;
    if (start < 0) break;
    const text = lines.slice(start, j + 1).join('\n');
    found.unshift(text.slice(text.indexOf('<!--') + 4, text.lastIndexOf('-->')).trim());
    j = start - 1;
  }
  return found;
}

/** tsContext returns the declarations of a block's `<!-- ts-context: … -->` comment, or ''. */
export function tsContext(block: DocBlock): string {
  const c = block.comments.find((t) => t.startsWith('ts-context:'));
  return c ? c.slice('ts-context:'.length).trim() : '';
}
