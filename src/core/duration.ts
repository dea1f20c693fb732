import ms from 'ms';
import { InvalidConfigError } from './errors.js';

const WITH_UNIT = /^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)\s*$/i;

/**
 * parseDuration turns "500ms", "15s", "2m", "1h" into milliseconds. A unit is required: a bare
 * number is ambiguous. Throws InvalidConfigError naming `what` and the bad value.
 */
export function parseDuration(text: string, what = 'duration'): number {
  const value = WITH_UNIT.test(text) ? ms(text.trim().toLowerCase() as ms.StringValue) : undefined;
  if (value === undefined || !Number.isFinite(value) || value < 0) {
    throw new InvalidConfigError(
      `${what}: "${text}" is not a duration; write a number with a unit, e.g. 500ms, 15s, 2m`,
    );
  }
  return Math.round(value);
}

/** formatDuration renders milliseconds for people ("1.5s", "250ms"). */
export function formatDuration(millis: number): string {
  if (!Number.isFinite(millis)) return String(millis);
  if (Math.abs(millis) < 1000) return `${Math.round(millis)}ms`;
  if (Math.abs(millis) < 60_000) return `${(millis / 1000).toFixed(millis % 1000 === 0 ? 0 : 1)}s`;
  return ms(Math.round(millis), { long: false });
}
