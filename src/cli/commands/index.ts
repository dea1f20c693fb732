import type { Command } from 'commander';
import { register as run } from './run.js';
import { register as isLeader } from './is-leader.js';
import { register as status } from './status.js';
import { register as release } from './release.js';
import { register as handover } from './handover.js';
import { register as demo } from './demo.js';
import { register as serve } from './serve.js';
import { register as aws } from './aws.js';
import { register as cron } from './cron.js';
import { register as once } from './once.js';
import { register as lock } from './lock.js';
import { register as shards } from './shards.js';
import { register as explainCmd } from './explain.js';
import { register as completion } from './completion.js';

/** COMMANDS registers every subcommand, in the order `baton --help` lists them (grouped: help.ts). */
export const COMMANDS: ((program: Command) => unknown)[] = [run, isLeader, status, release, handover, shards, cron, once, lock, serve, aws, demo, explainCmd, completion];
