import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { deployGraphBundle, explainWithoutPython, testPython, testVenvSettings } from '../python/helpers.js';
import { createRunContext } from '../runs/helpers.js';
import { mcpClient } from './helpers.js';

/** A graph that asks before it answers: its state is its input and output, its one node stops at an interrupt. */
const GRAPH = `
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    question: str
    answer: str
    sleep_seconds: float


def ask(state: State):
    time.sleep(state.get("sleep_seconds", 0))
    approved = interrupt({"question": f"Answer {state['question']}?"})
    return {"answer": f"{state['question']}: {approved}"}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
graph = builder.compile()
`;

/**
 * A graph whose state (a total TypedDict, which pydantic reads on any Python) has a field no node sets: the output
 * schema LangGraph gives requires it.
 */
const UNSET_FIELD_GRAPH = `
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Report(TypedDict):
    topic: str
    summary: str
    reviewer: str


def summarize(state: Report):
    return {"summary": f"about {state['topic']}"}


builder = StateGraph(Report)
builder.add_node("summarize", summarize)
builder.add_edge(START, "summarize")
builder.add_edge("summarize", END)
graph = builder.compile()
`;

explainWithoutPython('a LangGraph graph as an MCP tool');

describe.runIf(testPython() !== null)('a LangGraph graph as an MCP tool', () => {
  let ctx: TestContext;
  let client: Client;

  beforeAll(async () => {
    ctx = await createRunContext({ ...testVenvSettings(), MCP_CALL_WAIT_SECONDS: '6' });
    await deployGraphBundle(ctx, 'asking graph', GRAPH);
    await deployGraphBundle(ctx, 'report graph', UNSET_FIELD_GRAPH);
    client = await mcpClient(ctx);
  }, 180_000);

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('has the input and output schemas its build recorded', async () => {
    const [tool] = (await client.listTools()).tools;
    expect(tool?.name).toBe('asking_graph');
    expect(tool?.inputSchema.properties).toMatchObject({
      question: { type: 'string' },
      answer: { type: 'string' },
      thread_id: { type: 'string' },
    });
    expect(tool?.outputSchema).toMatchObject({
      type: 'object',
      anyOf: [{ properties: { answer: { type: 'string' } } }, {}, { properties: { status: { const: 'running' } } }],
    });
  });

  it('stops at the interrupt in a thread of its own, and a call with resume answers the graph’s output', {
    timeout: 120_000,
  }, async () => {
    const asked = await client.callTool({ name: 'asking_graph', arguments: { question: 'two words' } });
    expect(asked.isError, JSON.stringify(asked.content)).toBeFalsy();
    const { thread_id: threadId, interrupts } = asked.structuredContent as { thread_id: string; interrupts: unknown[] };
    expect(interrupts).toHaveLength(1);
    expect((asked.content as Array<{ text: string }>)[0]?.text).toContain('Answer two words?');

    const resumed = await client.callTool({ name: 'asking_graph', arguments: { thread_id: threadId, resume: 'yes' } });
    expect(resumed.isError, JSON.stringify(resumed.content)).toBeFalsy();
    expect(resumed.structuredContent).toEqual({ question: 'two words', answer: 'two words: yes' });
  });

  it('answers the output of a graph that leaves a state field unset: the official client takes it', async () => {
    const result = await client.callTool({ name: 'report_graph', arguments: { topic: 'otters' } });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toEqual({ topic: 'otters', summary: 'about otters' });
  });

  it('answers arguments that do not fit the input schema with a tool error the model reads, and starts no run', async () => {
    const before = (await ctx.call('GET', '/v1/runs')).json();
    const result = await client.callTool({ name: 'asking_graph', arguments: { question: 42 } });
    expect(result.isError).toBe(true);
    const text = (result.content as Array<{ text: string }>)[0]?.text;
    expect(text).toContain('Input validation error');
    expect(text).toContain('question');
    expect((await ctx.call('GET', '/v1/runs')).json()).toEqual(before);
  });

  it('answers a call that outlasts MCP_CALL_WAIT_SECONDS with structured content the output schema takes', {
    timeout: 60_000,
  }, async () => {
    // The official clients refuse a result without structured content from a tool with an output schema.
    const result = await client.callTool({ name: 'asking_graph', arguments: { question: 'slow', sleep_seconds: 60 } });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const runId = result._meta?.['crewd/run_id'] as string;
    expect(result.structuredContent).toEqual({
      status: 'running',
      run_id: runId,
      thread_id: result._meta?.['crewd/thread_id'],
    });
    const canceled = await ctx.call('POST', `/v1/runs/${runId}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(200);
  });
});
