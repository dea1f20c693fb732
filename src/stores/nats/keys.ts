/**
 * The one-to-one map between the kit's keys (`lease/<lock>`, `term/<lock>`, `ledger/<key>`)
 * and NATS KV keys, which allow only `[-/_=.A-Za-z0-9]` and use `.` to split subject tokens.
 *
 * A kit key becomes two tokens, `<family>.<rest>`: the family (`lease`, `term`, `ledger`) is
 * its own token so a listing can filter on `lease.*` on the server. In the rest, `A-Z a-z 0-9
 * - _ /` stay as they are (so `lease/web-1` is `lease.web-1`, readable with `nats kv get`), and
 * every other byte of its UTF-8 — `=` and `.` included — is written `=XX` in upper-case hex.
 * An empty rest is a lone `=` (an escape never stands alone, so it cannot be confused).
 */
const PLAIN = /[A-Za-z0-9_\-/]/;
const ALL_PLAIN = /^[A-Za-z0-9_\-/]+$/;

/** toNatsKey maps a kit key to its NATS KV key. */
export function toNatsKey(key: string): string {
  const slash = key.indexOf('/');
  // The kit's keys always have a family; anything else is a bug in the caller.
  if (slash < 1) throw new Error(`nats: key "${key}" has no family (expected family/rest)`);
  return `${escapeToken(key.slice(0, slash))}.${escapeToken(key.slice(slash + 1))}`;
}

/** fromNatsKey is the inverse of toNatsKey. */
export function fromNatsKey(natsKey: string): string {
  const dot = natsKey.indexOf('.');
  return `${unescapeToken(natsKey.slice(0, dot))}/${unescapeToken(natsKey.slice(dot + 1))}`;
}

/**
 * listFilter is the server-side filter for keys starting with `prefix`: the family's token
 * when the prefix names one, else every key. The caller still checks the prefix itself.
 */
export function listFilter(prefix: string): string {
  const slash = prefix.indexOf('/');
  return slash < 1 ? '>' : `${escapeToken(prefix.slice(0, slash))}.*`;
}

function escapeToken(text: string): string {
  if (text === '') return '=';
  // Most lock names need no escape; each renewal maps its key, so skip the per-character walk.
  if (ALL_PLAIN.test(text)) return text;
  let out = '';
  for (const ch of text) {
    if (PLAIN.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function unescapeToken(token: string): string {
  if (token === '=') return '';
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '=') {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(token.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}
