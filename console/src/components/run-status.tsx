import { useEffect, useState } from 'react';
import type { Schemas } from '../../../src/client/index.js';
import { Status } from './ui.js';

type Run = Schemas['Run'];

/** A run that stopped at an interrupt succeeded with output `{"interrupts": [...]}` (CONTRACTS §9). */
export function waitsForInput(run: Pick<Run, 'status' | 'output'>): boolean {
  const interrupts = run.output?.interrupts;
  return run.status === 'succeeded' && Array.isArray(interrupts) && interrupts.length > 0;
}

export function RunStatus({ run }: { run: Pick<Run, 'status' | 'output'> }) {
  return <Status value={waitsForInput(run) ? 'interrupted' : run.status} />;
}

/** The current time, once a second while `live`. */
function useNow(live: boolean): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    if (!live) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [live]);
  return now;
}

export function formatDuration(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** From the run's start to its end, counting live while it runs; "—" before it starts. */
export function Duration({ run }: { run: Pick<Run, 'status' | 'started_at' | 'completed_at' | 'created_at'> }) {
  const live = run.status === 'running' || run.status === 'pending';
  const now = useNow(live && run.started_at !== null);
  const start = run.started_at ?? (run.completed_at ? run.created_at : null);
  if (!start) return <>—</>;
  const end = run.completed_at ? Date.parse(run.completed_at) : now;
  return <span className={live ? 'live-duration' : undefined}>{formatDuration(end - Date.parse(start))}</span>;
}
