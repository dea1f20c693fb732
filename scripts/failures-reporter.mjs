// A second reporter for node's test runner, beside TAP: it keeps every failed test (its file,
// its path of suite names, the first lines of its error) and writes them as one short list when
// the run ends. scripts/test.mjs prints that list last, so the tail of a long CI log — often all
// that is kept of it — still names what failed.
export default async function* failures(source) {
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, nesting, file, details } = event.data;
    const error = details?.error;
    // A suite fails when a test in it fails; the test itself is the line worth reading.
    if (error?.failureType === 'subtestsFailed') continue;
    const cause = error?.cause ?? error;
    const message = String(cause?.message ?? cause ?? 'failed').split('\n').filter((l) => l.trim() !== '').slice(0, 6);
    failed.push({ name, nesting, file, message });
  }
  if (failed.length === 0) return;
  yield `${failed.length} failed:\n`;
  for (const f of failed) {
    yield `- ${f.file ? f.file.replace(process.cwd() + '/', '') + ': ' : ''}${f.name}\n`;
    for (const line of f.message) yield `    ${line}\n`;
  }
}
