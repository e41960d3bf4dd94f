import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RUN_LIMITS } from '../../src/run-limits.js';
import { pidMaxPerNamespace } from '../../src/sandbox/kernel.js';
import { tempDataDir } from '../builds/helpers.js';
import { createRunContext, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import {
  deployGraphBundle,
  environmentServerSockets,
  explainWithoutPython,
  forkServerPythons,
  forkServerSockets,
  testPython,
  testVenvSettings,
} from './helpers.js';

explainWithoutPython('Versions of one environment through its environment server');

/**
 * Says how it ran (forked or cold), where its files are, what it could read of another path, and (`proc`) what its
 * /proc shows: its own status and the processes listed, and (`settings`) whether it could write a kernel setting.
 */
const GRAPH = `
import ctypes
import errno
import os
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

IMPORTED_IN = os.getpid()


def write_setting():
    """Text into an integer setting: refused (EROFS, EACCES) where it cannot be written, EINVAL where it could."""
    try:
        with open("/proc/sys/kernel/printk_ratelimit", "w") as file:
            file.write("text")
        return "written"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def in_fresh_namespaces():
    """A fresh /proc from user, mount and PID namespaces of the run's own (the kernel allows it read-write only where
    a read-write proc mount is in the mount table), and whether the setting could be written there."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x00020000 | 0x20000000) != 0:
        return 0
    pid = os.fork()
    if pid == 0:
        libc.mount(b"none", b"/", None, (1 << 14) | (1 << 18), None)
        for flags in (2 | 4 | 8, 1 | 2 | 4 | 8):
            if libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0:
                os._exit(3 if write_setting() in ("written", "EINVAL") else 2)
        os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def kernel_settings():
    seen = {"direct": write_setting()}
    child = os.fork()
    if child == 0:
        os._exit(in_fresh_namespaces())
    outcomes = ["no namespaces", "no proc", "refused", "writable"]
    seen["nested"] = outcomes[os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])]
    return seen


class State(TypedDict, total=False):
    read: str
    forked: bool
    cwd: str
    got: str
    proc: bool
    settings: bool
    seen: dict


def own_proc():
    seen = {"pid": os.getpid(), "parent": os.getppid(), "listed": [], "status": "", "pid_max": ""}
    try:
        seen["listed"] = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
        with open("/proc/self/status") as file:
            seen["status"] = file.read()
        with open("/proc/sys/kernel/pid_max") as file:
            seen["pid_max"] = file.read().strip()
    except OSError as error:
        seen["status"] = type(error).__name__
    return seen


def look(state: State):
    if state.get("settings"):
        return {"forked": os.getpid() != IMPORTED_IN, "seen": kernel_settings()}
    if state.get("proc"):
        return {"forked": os.getpid() != IMPORTED_IN, "seen": own_proc()}
    got = ""
    if state.get("read"):
        try:
            with open(state["read"]) as file:
                got = "read: " + file.read(40)
        except OSError as error:
            got = type(error).__name__
    return {"forked": os.getpid() != IMPORTED_IN, "cwd": os.getcwd(), "got": got}


builder = StateGraph(State)
builder.add_node("look", look)
builder.add_edge(START, "look")
builder.add_edge("look", END)
graph = builder.compile()
`;

/** What the sandbox adds to RUN_MAX_PROCESSES for its pid_max (bubblewrap.ts). */
const RESERVED_PIDS = 300;

/** The sandbox in use: environment servers need bubblewrap (a version server narrows its environment's sandbox). */
const sandboxed = () => process.env.RUNNER_SANDBOX !== 'off';

describe.runIf(testPython() !== null && sandboxed())(
  'Versions of one environment through its environment server',
  () => {
    let ctx: RunContext;
    let dataDir: string;
    let first: string;
    let second: string;

    beforeAll(async () => {
      dataDir = tempDataDir();
      ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
      first = await deployGraphBundle(ctx, 'first-graph', GRAPH);
      second = await deployGraphBundle(ctx, 'second-graph', `${GRAPH}\n# the second version\n`);
    }, 240_000);
    afterAll(async () => ctx?.close());

    async function forkedRun(deploymentId: string, input: Record<string, unknown>) {
      return until(async () => {
        const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, input)).run_id, undefined, 60_000);
        expect(run.status, run.error_message).toBe('succeeded');
        return run.output.forked ? run : null;
      }, 120_000);
    }

    it('serves two versions of one environment from one environment server, each from its own version server', {
      timeout: 300_000,
    }, async () => {
      await forkedRun(first, {});
      await forkedRun(second, {});
      expect(environmentServerSockets(dataDir)).toHaveLength(1);
      expect(forkServerSockets(dataDir)).toHaveLength(2);
      // No version has a fork server of its own, and one process imported LangGraph first: the environment server.
      expect(forkServerPythons(dataDir, ['crewd_runner.forkserver'])).toEqual([]);
      const pythons = forkServerPythons(dataDir);
      const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      expect(pythons.filter((pid) => !pythons.includes(parentOf(pid)))).toHaveLength(1);
    });

    it("a version server sees its own files, not another version's", { timeout: 300_000 }, async () => {
      const own = await forkedRun(first, {});
      const other = await forkedRun(second, {});
      const ownFolder = own.output.cwd as string;
      const otherFolder = other.output.cwd as string;
      expect(ownFolder).not.toBe(otherFolder);

      const readsOwn = await forkedRun(first, { read: `${ownFolder}/graph.py` });
      expect(readsOwn.output.got).toMatch(/^read: /);
      const readsOther = await forkedRun(first, { read: `${otherFolder}/graph.py` });
      expect(readsOther.output.got).toBe('FileNotFoundError');
    });

    it('a run of a version server sees its own PID namespace in /proc, whoever crewd runs as', {
      timeout: 300_000,
    }, async () => {
      const run = await forkedRun(first, { proc: true });
      const seen = run.output.seen as {
        pid: number;
        parent: number;
        listed: number[];
        status: string;
        pid_max: string;
      };
      const field = (name: string) => seen.status.match(new RegExp(`^${name}:\\t(.*)$`, 'm'))?.[1];
      // Its own status, as the process it is in its PID namespace (one pid: /proc is of that namespace, not a parent's).
      expect(field('Pid'), seen.status).toBe(String(seen.pid));
      expect(field('NSpid')).toBe(String(seen.pid));
      // The namespace's processes (a proc mount shows its own PID namespace's only): its first one, the version
      // server, the run.
      expect(seen.listed).toEqual(expect.arrayContaining([1, seen.parent, seen.pid]));
      // Its own process limit where the kernel keeps pid_max per PID namespace (Linux 6.14): the sandbox's bound, as
      // a sandbox of its own would have (a new PID namespace starts with the machine's default). Not for crewd as
      // root: the kernel's settings are read-only in its sandboxes (the machine's user 0 could write them all), so the
      // environment's sandbox bounds its versions together; a writable /proc for the version's own would open them to
      // its runs too (the next test; docs/ARCHITECTURE.md).
      if (pidMaxPerNamespace() && process.getuid?.() !== 0) {
        expect(seen.pid_max).toBe(String(DEFAULT_RUN_LIMITS.processes + RESERVED_PIDS));
      }
    });

    it("a version server's runs cannot write the kernel's settings, nor through a /proc of namespaces of their own", {
      timeout: 300_000,
    }, async () => {
      const run = await forkedRun(first, { settings: true });
      const seen = run.output.seen as { direct: string; nested: string };
      // EINVAL would mean the kernel took the write and refused only the text. As root, /proc is read-only (EROFS);
      // as another user the setting is root's (EACCES).
      expect(['EROFS', 'EACCES'], JSON.stringify(seen)).toContain(seen.direct);
      // Where a read-write proc mount were in the mount table (the hidden one of notRootPrefix), the run's fresh /proc
      // would be writable, and as root the machine's user 0 writes the machine's settings there.
      expect(['no namespaces', 'no proc', 'refused'], JSON.stringify(seen)).toContain(seen.nested);
    });
  },
);
