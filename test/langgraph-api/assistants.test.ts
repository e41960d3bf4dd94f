import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultAssistantId } from '../../src/langgraph-api/translate.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { deployGraphBundle, explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { runSdkScript, startWithAgent } from './helpers.js';

explainWithoutPython('LangGraph API assistants through langgraph-sdk');

/** A graph with a state and a context schema of its own. */
const ECHO_GRAPH = `
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    text: str
    echo: str


class Context(TypedDict, total=False):
    user: str


def say(state: State):
    return {"echo": state.get("text", "")}


builder = StateGraph(State, context_schema=Context)
builder.add_node("say", say)
builder.add_edge(START, "say")
builder.add_edge("say", END)
graph = builder.compile()
`;

describe.runIf(testPython() !== null)('LangGraph API assistants through langgraph-sdk', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let url: string;

  beforeAll(async () => {
    ({ ctx, deploymentId, url } = await startWithAgent());
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('creates, finds, versions and deletes assistants with the sync and async clients', {
    timeout: 60_000,
  }, async () => {
    const result = await runSdkScript('assistants.py', { url, key: ADMIN_KEY });
    expect(result.default).toBe(defaultAssistantId(deploymentId));
  });

  it("serves a bundle graph's schemas and drawing, as the build's import check recorded them", {
    timeout: 120_000,
  }, async () => {
    await deployGraphBundle(ctx, 'echo', ECHO_GRAPH);
    const schemas = await ctx.call('GET', '/langgraph/assistants/echo/schemas');
    expect(schemas.statusCode, schemas.body).toBe(200);
    const body = schemas.json();
    expect(body.graph_id).toBe('echo');
    expect(body.input_schema.properties.text).toEqual({ type: 'string' });
    expect(body.state_schema.properties).toHaveProperty('echo');
    expect(body.context_schema.properties).toHaveProperty('user');
    const graph = (await ctx.call('GET', '/langgraph/assistants/echo/graph')).json();
    expect(graph.nodes.map((node: { id: string }) => node.id)).toEqual(['__start__', 'say', '__end__']);
  });

  it('takes a graph_id as a deployment id before a name, and answers 409 for a name two deployments share', async () => {
    const twins: string[] = [];
    for (let i = 0; i < 2; i++) {
      const twin = await ctx.call('POST', '/v1/deployments', { body: { name: 'twin' } });
      expect(twin.statusCode, twin.body).toBe(201);
      twins.push(twin.json().id);
    }
    const shared = await ctx.call('POST', '/langgraph/assistants', { body: { graph_id: 'twin' } });
    expect(shared.statusCode, shared.body).toBe(409);
    expect(shared.json().detail).toBe(
      `Graph twin names several deployments (${twins.join(', ')}): use a deployment id`,
    );
    // A deployment named after another's id: the id wins.
    const namesake = await ctx.call('POST', '/v1/deployments', { body: { name: deploymentId } });
    expect(namesake.statusCode, namesake.body).toBe(201);
    for (const graphId of [deploymentId, twins[0] as string]) {
      const made = await ctx.call('POST', '/langgraph/assistants', { body: { graph_id: graphId } });
      expect(made.statusCode, made.body).toBe(200);
      expect(made.json().graph_id).toBe(graphId === deploymentId ? 'agent' : 'twin');
    }
  });

  it('runs on the deployment a graph_id names when a deployment takes or leaves that name', async () => {
    const run = (graphId: string) =>
      ctx.call('POST', '/langgraph/runs', { body: { assistant_id: graphId, input: { question: 'one two' } } });
    const first = await run('agent');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().assistant_id).toBe(defaultAssistantId(deploymentId));
    // A new deployment of that name: the name now names two (a run's look-up may not keep the first).
    const spare = await ctx.call('POST', '/v1/deployments', { body: { name: 'agent' } });
    expect(spare.statusCode, spare.body).toBe(201);
    const spareId = spare.json().id as string;
    const rename = async (name: string) =>
      expect((await ctx.call('PATCH', `/v1/deployments/${spareId}`, { body: { name } })).statusCode).toBe(200);
    expect((await run('agent')).statusCode).toBe(409);
    await rename('spare');
    expect((await run('agent')).statusCode).toBe(200);
    await rename('agent');
    expect((await run('agent')).statusCode).toBe(409);
    await rename('spare');
  });

  it("answers 404 for another organization's assistant, by its UUID or its graph_id, and 409 for its id", async () => {
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    expect(org.statusCode, org.body).toBe(201);
    const otherKey = org.json().api_key.key as string;
    const asOther = { key: null, headers: { 'x-api-key': otherKey } };
    const mine = await ctx.call('POST', '/langgraph/assistants', { body: { graph_id: 'agent', name: 'mine' } });
    const mineId = mine.json().assistant_id as string;
    for (const id of [defaultAssistantId(deploymentId), 'agent', deploymentId, mineId]) {
      const seen = await ctx.call('GET', `/langgraph/assistants/${id}`, asOther);
      expect(seen.statusCode).toBe(404);
      expect(seen.json()).toEqual({ detail: `Assistant ${id} not found` });
    }
    // With an `agent` deployment of its own, the other organization may not take this organization's assistant id.
    const theirs = await ctx.call('POST', '/v1/deployments', { key: otherKey, body: { name: 'agent' } });
    expect(theirs.statusCode, theirs.body).toBe(201);
    const body = { graph_id: 'agent', assistant_id: mineId };
    const taken = await ctx.call('POST', '/langgraph/assistants', { ...asOther, body });
    expect(taken.statusCode, taken.body).toBe(409);
  });
});
