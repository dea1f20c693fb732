/**
 * The sidecar server: HTTP endpoints and the live dashboard for one elector.
 */
export { createLeaderServer, type LeaderServer, type LeaderServerOptions } from './server.js';
export { Timeline, type TimelineEntry, type TimelineKind, type Sighting } from './timeline.js';
export { LeaderTracker, type LeaderView } from './leader-view.js';
export { checkHealth, checkReady, type HealthStatus } from './health.js';
export { createLogger, logElectorEvents, silentLogger, type Logger, type LogFormat, type LogLevel } from './log.js';
export { scrubSecrets } from './redact.js';
export { tokenMatches } from './auth.js';
export { createShardMemberServer, type ShardMemberServer, type ShardMemberServerOptions } from './shards-server.js';
