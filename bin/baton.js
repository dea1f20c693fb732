#!/usr/bin/env node
// node:sqlite (the embedded store's driver on Node 22) announces itself as experimental on
// every load; a CLI user cannot act on that, so that one warning is not printed. Any other
// warning is printed as Node would.
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name === 'ExperimentalWarning' && /SQLite/.test(w.message)) return;
  process.stderr.write(`${w.name}: ${w.message}\n`);
});
await import('../dist/cli/main.js');
