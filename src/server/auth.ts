/**
 * The step-down token check. Tokens are compared as SHA-256 digests with timingSafeEqual, so
 * neither the comparison's time nor a length mismatch tells an attacker anything.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** bearerToken returns the token of an `Authorization: Bearer TOKEN` header, if any. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer[ \t]+(\S+)\s*$/i.exec(h) : null;
  return m?.[1];
}

/** tokenMatches compares `presented` with `expected` in constant time. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}
