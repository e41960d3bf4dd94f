"""The crew's model: a real one when configured (MODEL or OPENAI_API_KEY), else a deterministic stand-in.

The stand-in answers in CrewAI's ReAct text format, so that the crew runs its real loop (tool use, final answers,
events) with no network and the same result every time.
"""

import json
import os
import re

from crewai import LLM
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context

TOOL_NAME = "Keyword Extractor"


def crew_llm():
    if os.environ.get("MODEL") or os.environ.get("OPENAI_API_KEY"):
        return LLM(model=os.environ.get("MODEL", "gpt-4o-mini"))
    return DeterministicLLM(model="crewd/deterministic")


class DeterministicLLM(BaseLLM):
    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ):
        with llm_call_context():
            return self._answer_call(messages, tools, from_task, from_agent)

    def _answer_call(self, messages, tools, from_task, from_agent):
        self._emit_call_started_event(messages=messages, tools=tools, from_task=from_task, from_agent=from_agent)
        prompt = _text(messages)
        answer = _answer(prompt, _tool_called(messages), getattr(from_agent, "role", "") or "")
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(answer.split()),
            "total_tokens": len(prompt.split()) + len(answer.split()),
        }
        self._track_token_usage_internal(usage)
        self._emit_call_completed_event(
            response=answer,
            call_type=LLMCallType.LLM_CALL,
            from_task=from_task,
            from_agent=from_agent,
            messages=messages,
            usage=usage,
        )
        return answer

    def supports_stop_words(self):
        return False

    def get_context_window_size(self):
        return 8192


def _text(messages):
    if isinstance(messages, str):
        return messages
    return "\n".join(str(message.get("content", "")) for message in messages)


def _topic(prompt):
    found = re.search(r"research about (.+?)\.", prompt) or re.search(r"report about (.+?)\.", prompt)
    return found.group(1).strip() if found else "the topic"


def _tool_called(messages):
    if isinstance(messages, str):
        return False
    return any(
        message.get("role") == "assistant" and f"Action: {TOOL_NAME}" in str(message.get("content"))
        for message in messages
    )


def _answer(prompt, tool_called, role):
    topic = _topic(prompt)
    if TOOL_NAME in prompt and not tool_called:
        return (
            "Thought: I should take the keywords of the topic first.\n"
            f"Action: {TOOL_NAME}\n"
            f"Action Input: {json.dumps({'text': topic})}"
        )
    if "Analyst" in role:
        body = f"# {topic}\n\n## Overview\n{topic} is covered in three points below.\n\n## Findings\nSee the research."
    else:
        keywords = _observation(prompt)
        body = f"- {topic}: keywords {keywords}\n- {topic}: current state\n- {topic}: open questions"
    return f"Thought: I now know the final answer\nFinal Answer: {body}"


def _observation(prompt):
    found = re.findall(r"Observation:\s*(.+)", prompt)
    return found[-1].strip() if found else "(none)"
