import { versionNotFound } from '../deployments/service.js';
import type { LocalEventBus } from '../events/bus.js';
import type { RunEventFeed } from '../events/types.js';
import type { RunEventLog } from '../execution/event-log.js';
import type { StreamRecord, StreamSource } from '../streams/stream-source.js';
import type { BuildVersionRecord } from './repository.js';
import * as repo from './repository.js';

/** A build going on here: its log, for streams that open while it runs. */
export interface ActiveBuild {
  orgId: string;
  log: RunEventLog;
}

function recordOf(version: BuildVersionRecord): StreamRecord {
  const terminal = version.status !== 'building';
  return {
    status: version.status,
    terminal,
    running: !terminal,
    instanceId: version.build_instance_id,
    end: { status: version.status === 'ready' ? 'ready' : 'failed', error: version.build_error },
  };
}

/** A version's build, followed by the run event stream: its log is stored under the version's id. */
export const buildStreamSource: StreamSource = {
  async find(db, orgId, id) {
    const version = await repo.findVersionForBuild(db, id);
    return version && version.org_id === orgId ? recordOf(version) : undefined;
  },
  async findById(db, id) {
    const version = await repo.findVersionForBuild(db, id);
    return version && recordOf(version);
  },
  notFound: versionNotFound,
};

/** The run event bus, telling new streams of the builds going on here (as execution/running-runs.ts does for runs). */
export function buildFeed(bus: LocalEventBus, active: Map<string, ActiveBuild>): RunEventFeed {
  return {
    subscribe(id, listener, onRemoteLost) {
      const subscription = bus.subscribe(id, listener, onRemoteLost);
      const build = active.get(id);
      if (!subscription || !build) return subscription;
      return { ...subscription, live: { orgId: build.orgId, backlog: build.log.backlog() } };
    },
  };
}
