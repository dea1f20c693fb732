/**
 * baton/aws — leader election for EC2 Auto Scaling groups without a store (seeds 000, 001, 004,
 * fixed), and hand-over of store leases before an instance is terminated.
 *
 * - `checkLowest` (asg-lowest): the lowest-id InService, Healthy member leads.
 * - `reconcileHandler` / `reconcileGroup`: a Lambda keeps a leader tag on exactly one member.
 * - `checkLeaderTag` (asg-tag): does this instance carry that tag?
 * - `drainInstance` / `waitForTermination`: step down and release, then let Auto Scaling go on.
 *
 * The AWS SDK v3 clients (@aws-sdk/client-auto-scaling, @aws-sdk/client-ec2) are optional peer
 * dependencies, imported only when a call needs them. None of this gives a fencing token: for
 * work where two leaders at once would do harm, use a lease store (`baton run`) and keep these
 * for hand-over and for tolerant work. See docs/aws.md.
 */
export { connectAws, paginate, type AwsApi, type GroupInstance, type GroupOf, type TagRow } from './api.js';
export { isCandidate, electionCandidates, compareIds } from './candidates.js';
export { AwsUnavailableError, AwsRequestError, translateAwsError } from './errors.js';
export { InstanceMetadata, resolveRegion, DEFAULT_METADATA_ENDPOINT, type InstanceMetadataOptions } from './imds.js';
export { checkLowest, type LowestResult, type CheckOptions } from './lowest.js';
export { checkLeaderTag, leaderTagKey, DEFAULT_LEADER_TAG, type TagResult } from './leader-tag.js';
export { reconcileGroup, planRound, ownTagged, ReconcileError, type ReconcileOptions, type ReconcileResult, type Plan } from './reconcile.js';
export { reconcileHandler, makeReconcileHandler, groupsInEvent, DEFAULT_GROUP_TAG, type HandlerOptions, type HandlerResult } from './lambda.js';
export { drainInstance, type DrainOptions, type DrainResult, type LockHandOver } from './drain.js';
export { waitForTermination, LEAVING_STATES, type WatchOptions } from './watch-termination.js';
export { loadSdkModule, type SdkOptions } from './sdk.js';
