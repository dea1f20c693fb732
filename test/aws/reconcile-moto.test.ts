/**
 * The shared AWS scenarios (test/aws/scenarios.ts: reconcile, the Lambda handler fed SNS
 * notifications, the CLI) on moto — an implementation of Auto Scaling and EC2 written
 * independently of baton and of its fake — in server mode (infra/servers/moto.ts).
 */
import { awsScenarios } from './scenarios.js';
import { MotoWorld } from './worlds.js';

awsScenarios(await MotoWorld.start());
