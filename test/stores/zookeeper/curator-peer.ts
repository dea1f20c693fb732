/**
 * CuratorPeer runs test/fixtures/zk-peers/CuratorLatchPeer.java — a real Apache Curator
 * LeaderLatch participant from Debian's jars — and collects its JSON event lines. Compiled once
 * per test process into a temporary directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../harness/cli.js';

const JARS = ['curator-recipes', 'curator-framework', 'curator-client', 'zookeeper', 'zookeeper-jute', 'slf4j-api', 'slf4j-nop'].map((j) => `/usr/share/java/${j}.jar`);

/** curatorAvailable tells whether javac and the Curator jars are installed. */
export function curatorAvailable(): boolean {
  return existsSync('/usr/bin/javac') && JARS.every((j) => existsSync(j));
}

let classes: string | undefined;
function compile(): string {
  if (classes) return classes;
  const out = mkdtempSync(join(tmpdir(), 'baton-curator-'));
  const r = spawnSync('/usr/bin/javac', ['-cp', JARS.join(':'), '-d', out, join(ROOT, 'test/fixtures/zk-peers/CuratorLatchPeer.java')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`javac failed: ${r.stderr}`);
  return (classes = out);
}

/** CuratorEvent is one line the peer printed: ms is CLOCK_MONOTONIC in ms. */
export interface CuratorEvent {
  event: 'started' | 'leader' | 'follower' | 'closed';
  id: string;
  ms: number;
}

/** CuratorPeer: one participant process. */
export class CuratorPeer {
  readonly events: CuratorEvent[] = [];
  readonly child: ChildProcess;
  stderr = '';
  readonly exited: Promise<void>;

  constructor(connectString: string, path: string, readonly id: string, sessionMs = 2000) {
    const cp = [compile(), ...JARS].join(':');
    this.child = spawn('/usr/bin/java', ['-Xmx64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', cp, 'CuratorLatchPeer', connectString, path, id, String(sessionMs)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buf = '';
    this.child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line.startsWith('{')) this.events.push(JSON.parse(line) as CuratorEvent);
      }
    });
    this.child.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((resolve) => this.child.on('close', () => resolve()));
  }

  has(event: CuratorEvent['event']): boolean {
    return this.events.some((e) => e.event === event);
  }

  signal(sig: NodeJS.Signals): void {
    try {
      this.child.kill(sig);
    } catch {
      // gone
    }
  }
}
