// The dynalite server process the harness runs (infra/servers/dynalite.ts): dynalite on
// --port with its LevelDB at --path, plus a request counter kept inside the server process —
// every DynamoDB API call it receives, by operation (the X-Amz-Target header) — served as JSON
// on --stats-port, so the bench counts what the server was asked, as it does for the other stores.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    'stats-port': { type: 'string' },
    path: { type: 'string' },
    'table-ms': { type: 'string', default: '50' },
  },
});
const dynalite = createRequire(import.meta.url)('dynalite');
const ms = Number(values['table-ms']);
const server = dynalite({ path: values.path, createTableMs: ms, deleteTableMs: ms, updateTableMs: ms });
const counts = {};
server.prependListener('request', (req) => {
  const op = String(req.headers['x-amz-target'] ?? 'other').replace(/^DynamoDB_\d+\./, '');
  counts[op] = (counts[op] ?? 0) + 1;
});
server.listen(Number(values.port), values.host);
if (values['stats-port']) {
  createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(counts));
  }).listen(Number(values['stats-port']), values.host);
}
