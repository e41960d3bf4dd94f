import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, upload, waitForBuild } from '../builds/helpers.js';
import type { TestContext } from '../helpers/app.js';
import { explainWithoutPython, testPython, testVenvBundleEnv, testVenvSettings } from '../python/helpers.js';
import { createRunContext, until } from '../runs/helpers.js';

/** The called crew: one agent researching `{topic}`, on a model that answers from the task it is given. */
const RESEARCHER = `
import re

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM


class ResearchLLM(BaseLLM):
    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, from_agent=None,
             response_model=None):
        text = messages if isinstance(messages, str) else "\\n".join(str(m.get("content", "")) for m in messages)
        topic = re.search(r"Find one fact about (\\w+)", text).group(1)
        return f"Thought: I now know the final answer\\nFinal Answer: {topic} hold hands while they sleep"


researcher = Agent(role="Researcher", goal="Find facts", backstory="Curious.", llm=ResearchLLM(model="research"),
                   max_retry_limit=0)
task = Task(name="research", description="Find one fact about {topic}", expected_output="One fact", agent=researcher)
crew = Crew(agents=[researcher], tasks=[task])
`;

/**
 * The calling crew: its agent has crewd's /mcp as an MCP server (CrewAI's own MCPServerHTTP, from the deployment's
 * variables), and a model that calls the researcher's tool once, then answers with what the tool said.
 */
const WRITER = `
import json
import os
import re

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.mcp import MCPServerHTTP


class WriterLLM(BaseLLM):
    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, from_agent=None,
             response_model=None):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        text = "\\n".join(str(m.get("content", "")) for m in messages)
        called = any(m.get("role") == "assistant" and "Action:" in str(m.get("content")) for m in messages)
        if not called:
            tool = re.search(r"Tool Name: (\\S*researcher\\S*)", text).group(1)
            topic = re.search(r"Write a line about (\\w+)", text).group(1)
            return f"Thought: the researcher knows\\nAction: {tool}\\nAction Input: {json.dumps({'topic': topic})}"
        said = re.findall(r"Observation:\\s*(.+)", text)[-1].strip()
        return f"Thought: I now know the final answer\\nFinal Answer: The researcher said: {said}"


crewd = MCPServerHTTP(url=os.environ["CREWD_MCP_URL"], headers={"Authorization": f"Bearer {os.environ['CREWD_MCP_KEY']}"})
writer = Agent(role="Writer", goal="Write from research", backstory="Asks the researcher first.",
               llm=WriterLLM(model="writer"), mcps=[crewd], max_retry_limit=0)
task = Task(name="write", description="Write a line about {topic}", expected_output="One line", agent=writer)
crew = Crew(agents=[writer], tasks=[task])
`;

/**
 * A Python crew deployment named `name` with `variables`, whose production version is built from `source`; its id.
 * The variables come first: the build's import check imports the module with them, as a run does.
 */
async function deployCrew(
  ctx: TestContext,
  name: string,
  source: string,
  variables: Record<string, string> = {},
): Promise<string> {
  const file = name;
  const deploymentId = await createDeployment(ctx, name);
  const set = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, { body: { variables } });
  expect(set.statusCode, set.body).toBe(200);
  const crewdJson = { crew: `${file}:crew`, env: testVenvBundleEnv(), timeout_seconds: 120 };
  const bundle = project({ 'crewd.json': JSON.stringify(crewdJson), [`${file}.py`]: source });
  const response = await upload(ctx, deploymentId, bundle, '?environment=production');
  expect(response.statusCode, response.body).toBe(201);
  const version = await waitForBuild(ctx, deploymentId, response.json().id);
  expect(version.status, version.build_error).toBe('ready');
  return deploymentId;
}

explainWithoutPython('a CrewAI crew calling another deployment through MCP');

describe.runIf(testPython() !== null)('a CrewAI crew calling another deployment through MCP', () => {
  let ctx: TestContext;
  let researcherId: string;
  let writerId: string;

  beforeAll(async () => {
    // Runners must reach crewd's own port: the isolated network keeps them off every address of the host
    // (docs/operations.md#runner-network), so this crewd gives them the host's network.
    ctx = await createRunContext({ ...testVenvSettings(), RUNNER_NETWORK: 'on' });
    researcherId = await deployCrew(ctx, 'researcher', RESEARCHER);
    // The calling crew's key: a member key of the organization, as a deployment variable.
    const key = await ctx.call('POST', '/v1/api-keys', { body: { name: 'writer crew' } });
    expect(key.statusCode, key.body).toBe(201);
    writerId = await deployCrew(ctx, 'writer', WRITER, {
      CREWD_MCP_URL: `${ctx.baseUrl}/mcp`,
      CREWD_MCP_KEY: key.json().key,
    });
  }, 300_000);

  afterAll(async () => {
    await ctx?.close();
  });

  it('runs the called crew as a tool of the calling crew’s agent, and answers with its output', {
    timeout: 180_000,
  }, async () => {
    const started = await ctx.call('POST', '/v1/runs', {
      body: { deployment_id: writerId, input: { topic: 'otters' } },
    });
    expect(started.statusCode, started.body).toBe(202);
    const runId = started.json().run_id as string;
    const run = await until(async () => {
      const found = (await ctx.call('GET', `/v1/runs/${runId}`)).json();
      return found.status === 'running' || found.status === 'pending' ? null : found;
    }, 150_000);
    expect(run.status, run.error_message).toBe('succeeded');
    expect(run.output.raw).toContain('The researcher said:');
    expect(run.output.raw).toContain('otters hold hands while they sleep');

    // The researcher ran as an ordinary run of its own deployment, with the arguments the writer's agent gave.
    const runs = (await ctx.call('GET', `/v1/runs?deployment_id=${researcherId}`)).json().runs;
    expect(runs).toHaveLength(1);
    const called = (await ctx.call('GET', `/v1/runs/${runs[0].id}`)).json();
    expect(called.status).toBe('succeeded');
    expect(called.input).toEqual({ topic: 'otters' });
  });
});
