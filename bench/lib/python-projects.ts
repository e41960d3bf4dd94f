import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** The Python test environment with real crewai and langgraph (runners/python/scripts/test-env.sh). */
export function testVenv(): string {
  const venv = process.env.CREWD_PYTHON_TEST_VENV ?? path.join(homedir(), '.cache/crewd/python-venv-test');
  if (!existsSync(path.join(venv, 'bin/python'))) {
    throw new Error(`no Python test environment at ${venv}: run runners/python/scripts/test-env.sh first`);
  }
  return venv;
}

/**
 * Nothing leaves the machine: CrewAI's telemetry and tracing, OpenTelemetry, LiteLLM's cost map; the variables
 * docs/python-crews.md ("No telemetry") tells users to set, and no others.
 */
const OFFLINE_ENV: Record<string, string> = {
  CREWAI_DISABLE_TELEMETRY: 'true',
  CREWAI_DISABLE_TRACKING: 'true',
  CREWAI_TRACING_ENABLED: 'false',
  OTEL_SDK_DISABLED: 'true',
  LITELLM_LOCAL_MODEL_COST_MAP: 'True',
};

/**
 * The version env of the bench's bundles: crewai and langgraph imported from the test environment, so the
 * build installs nothing from PyPI; the build puts the crewd runner on the path.
 */
export function bundleEnv(venv: string): Record<string, string> {
  const version = readdirSync(path.join(venv, 'lib')).find((name) => name.startsWith('python'));
  return { ...OFFLINE_ENV, PYTHONPATH: path.join(venv, 'lib', version as string, 'site-packages') };
}

/**
 * A one-node graph that echoes its input; `forked` says whether it runs in a child of a fork server, `in_worker`
 * whether in a worker (RUN_ISOLATION=deployment: the worker's loop is loaded).
 */
const GRAPH = `
import os
import sys
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

IMPORTED_IN = os.getpid()


class State(TypedDict, total=False):
    text: str
    forked: bool
    in_worker: bool


def echo(state: State):
    in_worker = "crewd_runner.workerloop" in sys.modules
    return {"text": state.get("text", ""), "forked": os.getpid() != IMPORTED_IN, "in_worker": in_worker}


builder = StateGraph(State)
builder.add_node("echo", echo)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
`;

/** One agent, one task, a deterministic BaseLLM; its answer says whether it runs in a forked child. */
const CREW = `
import os
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM

IMPORTED_IN = os.getpid()


class AnswerLLM(BaseLLM):
    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, from_agent=None,
             response_model=None):
        return f"Thought: I now know the final answer\\nFinal Answer: forked={os.getpid() != IMPORTED_IN}"


def crew():
    writer = Agent(role="Writer", goal="Write one line about {topic}", backstory="Brief.",
                   llm=AnswerLLM(model="bench/answer"), max_retry_limit=0)
    task = Task(name="write", description="Write one line about {topic}", expected_output="One line", agent=writer)
    return Crew(agents=[writer], tasks=[task])
`;

/**
 * The same graph and crew called in a warm Python process, which stays up: each line on its standard
 * input (`invoke N` or `kickoff N`) gets a line of N timings in ms; one call of each comes first.
 */
const WARM = `
import json, sys, time
sys.path.insert(0, ".")
from graph import graph
from crew import crew

actions = {
    "invoke": lambda: graph.invoke({"text": "hello"}),
    "kickoff": lambda: crew().kickoff(inputs={"topic": "bees"}),
}
for action in actions.values():
    action()
print("ready", flush=True)
for line in sys.stdin:
    name, runs = line.split()
    times = []
    for _ in range(int(runs)):
        started = time.perf_counter()
        actions[name]()
        times.append((time.perf_counter() - started) * 1000)
    print(json.dumps(times), flush=True)
`;

/** Writes the graph and crew projects (crewd.json each) and the warm script into `dir`. */
export function writeProjects(dir: string, env: Record<string, string>): { graph: string; crew: string } {
  const graph = path.join(dir, 'graph-project');
  const crew = path.join(dir, 'crew-project');
  for (const [folder, file, source, entry] of [
    [graph, 'graph.py', GRAPH, { graph: 'graph.py:graph' }],
    [crew, 'crew.py', CREW, { crew: 'crew:crew' }],
  ] as const) {
    writeFileSync(path.join(dir, file), source);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, file), source);
    writeFileSync(path.join(folder, 'crewd.json'), JSON.stringify({ ...entry, env }));
  }
  writeFileSync(path.join(dir, 'warm.py'), WARM);
  return { graph, crew };
}

/** A warm Python process of the test environment that times `graph.invoke` and `crew().kickoff()` on request. */
export interface WarmProcess {
  times(action: 'invoke' | 'kickoff', runs: number): Promise<number[]>;
  stop(): void;
}

export async function startWarm(venv: string, dir: string): Promise<WarmProcess> {
  // This process is the bench's own, not crewd's: a scratch home keeps CrewAI's storage out of the real one.
  const env = { ...OFFLINE_ENV, HOME: dir, PATH: process.env.PATH ?? '' };
  const child = spawn(path.join(venv, 'bin/python'), ['warm.py'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error('the warm Python process ended');
    return line.value;
  };
  while ((await next()) !== 'ready');
  return {
    async times(action, runs) {
      child.stdin.write(`${action} ${runs}\n`);
      // CrewAI may print lines of its own: the answer is the line that is a JSON list.
      for (;;) {
        const line = await next();
        if (line.startsWith('[')) return JSON.parse(line) as number[];
      }
    },
    stop: () => child.kill(),
  };
}
