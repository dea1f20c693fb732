/**
 * Operator signals: how the CLI takes over SIGINT, SIGTERM and SIGHUP from Node (whose default
 * is to exit at once, leaving the command and the lease behind) and the exit code they give.
 */
import { constants } from 'node:os';

const signalNumbers = constants.signals as Record<string, number>;

/** signalExitCode is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(sig: NodeJS.Signals): number {
  return 128 + (signalNumbers[sig] ?? 15);
}

/**
 * onTerminationSignals calls `handler` on SIGINT, SIGTERM and SIGHUP (instead of Node's default
 * of exiting) until the returned function is called.
 */
export function onTerminationSignals(handler: (sig: NodeJS.Signals) => void): () => void {
  const sigs = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const listeners = sigs.map((sig) => [sig, () => handler(sig)] as const);
  for (const [sig, h] of listeners) process.on(sig, h);
  return () => {
    for (const [sig, h] of listeners) process.off(sig, h);
  };
}
