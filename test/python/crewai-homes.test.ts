import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, tempDataDir, waitForBuild } from '../builds/helpers.js';
import { createRunContext, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import { explainWithoutPython, forkServerSockets, testPython, testVenvBundleEnv, testVenvSettings } from './helpers.js';

explainWithoutPython("CrewAI crews' files in a home of each run's own (CONTRACTS §12 'Home')");

/**
 * A crew whose model answers with what the run found before its kickoff: the task outputs CrewAI keeps in its
 * latest-kickoff database (under its storage folder, the same `project` folder name for every bundle), and a note it
 * wrote under ~/.cache and read back.
 */
const crew = (mark: string) => `
import json, os, sqlite3
from pathlib import Path

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai_core.paths import db_storage_path

MARK = ${JSON.stringify(mark)}
IMPORTED_IN = os.getpid()


class ReportLLM(BaseLLM):
    report: str = ""

    def call(self, messages, *args, **kwargs):
        return f"Thought: I now know the final answer\\nFinal Answer: {self.report}"


def stored_outputs():
    database = Path(db_storage_path()) / "latest_kickoff_task_outputs.db"
    if not database.exists():
        return []
    with sqlite3.connect(database) as connection:
        return [row[0] for row in connection.execute("select output from latest_kickoff_task_outputs")]


def make():
    note = Path(os.path.expanduser("~/.cache/crew-note.txt"))
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(MARK)
    report = {"mark": MARK, "seen": stored_outputs(), "note": note.read_text(), "forked": os.getpid() != IMPORTED_IN}
    agent = Agent(role="Reporter", goal="Report", backstory="None.", llm=ReportLLM(model="report", report=json.dumps(report)))
    task = Task(name="report", description="Report what you found", expected_output="JSON", agent=agent)
    return Crew(agents=[agent], tasks=[task])
`;

describe.runIf(testPython() !== null)("CrewAI crews' files in a home of each run's own (CONTRACTS §12 'Home')", () => {
  let ctx: RunContext;
  let dataDir: string;
  const orgs: Record<string, { key: string; deploymentId: string }> = {};

  async function deployCrew(mark: string, key: string) {
    const asOrg = { call: (method: string, url: string, options = {}) => ctx.call(method, url, { ...options, key }) };
    const deploymentId = await createDeployment(asOrg, mark);
    const crewdJson = { crew: 'crew:make', env: testVenvBundleEnv(), timeout_seconds: 120 };
    const response = await ctx.app.inject({
      method: 'POST',
      url: `/v1/deployments/${deploymentId}/versions?environment=production`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/gzip' },
      payload: project({ 'crewd.json': JSON.stringify(crewdJson), 'crew.py': crew(mark) }),
    });
    expect(response.statusCode, response.body).toBe(201);
    const version = await waitForBuild(asOrg, deploymentId, response.json().id);
    expect(version.status, version.build_error).toBe('ready');
    return deploymentId;
  }

  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
    const created = await ctx.call('POST', '/v1/organizations', { body: { name: 'organization-b' } });
    expect(created.statusCode, created.body).toBe(201);
    const keyOfB = created.json().api_key.key as string;
    orgs.a = { key: ctx.adminKey, deploymentId: await deployCrew('mark-of-a', ctx.adminKey) };
    orgs.b = { key: keyOfB, deploymentId: await deployCrew('mark-of-b', keyOfB) };
  }, 300_000);
  afterAll(async () => ctx?.close());

  async function runCrew(org: 'a' | 'b') {
    const { key, deploymentId } = orgs[org] as { key: string; deploymentId: string };
    const started = await startRun(ctx, deploymentId, {}, key);
    const run = await waitForRun(ctx, started.run_id, undefined, 120_000, key);
    expect(run.status, run.error_message).toBe('succeeded');
    return JSON.parse(run.output.raw as string) as { mark: string; seen: string[]; note: string; forked: boolean };
  }

  it("runs two organizations' crews one after the other, cold and forked: none finds any stored task output", {
    timeout: 300_000,
  }, async () => {
    // Each version's first run is cold and starts its fork server; the runs after it are its children.
    const reports = [await runCrew('a'), await runCrew('b')];
    await until(() => forkServerSockets(dataDir).length === 2, 120_000);
    for (const org of ['a', 'b', 'a', 'b'] as const) reports.push(await runCrew(org));

    for (const report of reports) {
      // Not the other organization's outputs, nor its own earlier run's: a crew's files go with its run.
      expect(report.seen).toEqual([]);
      // A file written under ~/.cache is read back within the run.
      expect(report.note).toBe(report.mark);
    }
    expect(reports.map((report) => report.forked)).toEqual([false, false, true, true, true, true]);
    expect(reports.map((report) => report.mark)).toEqual(['a', 'b', 'a', 'b', 'a', 'b'].map((o) => `mark-of-${o}`));
  });
});
