"""LangGraph checkpoints as crewd keeps them (crewd_runner.langgraph_checkpoint.dump), for the TypeScript reader's
test: the token graph stopped at its review node, then resumed to its end; and one value of each MessagePack kind
JsonPlusSerializer writes."""

import asyncio
import base64
import json
import os
import sys
from datetime import UTC, datetime

from crewd_runner import langgraph_checkpoint
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

sys.path.insert(0, os.environ["PROJECTS"])
import token_graph


async def main() -> None:
    saver = InMemorySaver()
    graph = token_graph.builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    question = {
        "messages": [{"role": "user", "content": "hi"}],
        "tokens": 1,
        "ask": True,
    }
    await graph.ainvoke(question, config)
    paused = langgraph_checkpoint.dump(saver, "t", include_subgraphs=True)
    expected_paused = list(graph.get_state(config).next)
    await graph.ainvoke(Command(resume="yes"), config)
    ended = langgraph_checkpoint.dump(saver, "t", include_subgraphs=True)
    kinds = {
        "small": 1,
        "negative": -5,
        "large": 2**40,
        "float": 1.5,
        "text": "x" * 40,
        "list": [1, "two"],
        "none": None,
        "yes": True,
        "message": AIMessage(content="hi"),
        "when": datetime(2026, 1, 2, tzinfo=UTC),
    }
    kind, data = saver.serde.dumps_typed(kinds)
    print(
        json.dumps(
            {
                "paused": paused,
                "paused_next": expected_paused,
                "ended": ended,
                "ended_next": list(graph.get_state(config).next),
                "kinds": {"type": kind, "data": base64.b64encode(data).decode("ascii")},
            }
        )
    )


asyncio.run(main())
