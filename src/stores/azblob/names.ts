/**
 * Blob names for the kit's keys (`lease/<lock>`, `term/<lock>`, `ledger/<key>`): the family
 * stays a folder, the rest is escaped so any key is one blob name Azure treats plainly —
 * no "/" inside (no virtual folders to walk), no trailing "." (Azure's own advice). Every
 * character outside [A-Za-z0-9_.:-], and a final ".", becomes `~XX` (UTF-8 bytes in upper-case
 * hex): one-to-one, and baton's usual names ([A-Za-z0-9._:-]) stay as they are, so a 512-character
 * ledger key fits Azure's 1024-character blob name.
 */

/** blobName is `prefix + family/escaped-rest` for a kit key. */
export function blobName(prefix: string, key: string): string {
  const slash = key.indexOf('/');
  return `${prefix}${key.slice(0, slash + 1)}${escapeKeyPart(key.slice(slash + 1), true)}`;
}

/** keyOf is the kit key a blob name stands for (the inverse of blobName). */
export function keyOf(prefix: string, name: string): string {
  const rest = name.slice(prefix.length);
  const slash = rest.indexOf('/');
  return `${rest.slice(0, slash + 1)}${unescapeKeyPart(rest.slice(slash + 1))}`;
}

/** namePrefix is the blob-name prefix that lists every key starting with `keyPrefix`. */
export function namePrefix(prefix: string, keyPrefix: string): string {
  const slash = keyPrefix.indexOf('/');
  // Not the final-dot rule: "a." is a prefix of "a.b", whose dot stays a dot.
  return `${prefix}${keyPrefix.slice(0, slash + 1)}${escapeKeyPart(keyPrefix.slice(slash + 1), false)}`;
}

function escapeKeyPart(text: string, whole: boolean): string {
  const bytes = Buffer.from(text, 'utf8');
  let out = '';
  bytes.forEach((byte, i) => {
    const c = String.fromCharCode(byte);
    const plain = /[A-Za-z0-9_.:-]/.test(c) && !(whole && c === '.' && i === bytes.length - 1);
    out += plain ? c : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  });
  return out;
}

function unescapeKeyPart(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '~') {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(text.charCodeAt(i));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}
