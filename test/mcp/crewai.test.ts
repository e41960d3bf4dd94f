import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, upload, waitForBuild } from '../builds/helpers.js';
import type { TestContext } from '../helpers/app.js';
import { explainWithoutPython, testPython, testVenvBundleEnv, testVenvSettings } from '../python/helpers.js';
import { createRunContext } from '../runs/helpers.js';
import { mcpClient } from './helpers.js';

/** A crew of one agent and one task with a `{topic}` placeholder, on a model that always gives the same answer. */
const CREW = `
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM


class AnswerLLM(BaseLLM):
    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, from_agent=None,
             response_model=None):
        return "Thought: I now know the final answer\\nFinal Answer: a note"


writer = Agent(role="Writer on {topic}", goal="Write one line about {topic}", backstory="Brief, for {audience}.",
               llm=AnswerLLM(model="answer"), max_retry_limit=0)
task = Task(name="write", description="Write one line about {topic}", expected_output="One line", agent=writer)
crew = Crew(agents=[writer], tasks=[task])
`;

explainWithoutPython('a CrewAI crew as an MCP tool');

describe.runIf(testPython() !== null)('a CrewAI crew as an MCP tool', () => {
  let ctx: TestContext;
  let client: Client;

  beforeAll(async () => {
    ctx = await createRunContext(testVenvSettings());
    const deploymentId = await createDeployment(ctx, 'writer crew');
    const crewdJson = { crew: 'writer:crew', env: testVenvBundleEnv(), timeout_seconds: 120 };
    const bundle = project({ 'crewd.json': JSON.stringify(crewdJson), 'writer.py': CREW });
    const response = await upload(ctx, deploymentId, bundle, '?environment=production');
    expect(response.statusCode, response.body).toBe(201);
    const version = await waitForBuild(ctx, deploymentId, response.json().id);
    expect(version.status, version.build_error).toBe('ready');
    client = await mcpClient(ctx);
  }, 180_000);

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('takes the crew’s placeholders as its input schema, and answers the crew’s output', {
    timeout: 120_000,
  }, async () => {
    const [tool] = (await client.listTools()).tools;
    expect(tool?.name).toBe('writer_crew');
    expect(tool?.inputSchema.properties).toMatchObject({ topic: { type: 'string' }, audience: { type: 'string' } });

    const result = await client.callTool({ name: 'writer_crew', arguments: { topic: 'otters', audience: 'kids' } });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ raw: 'a note' });
  });
});
