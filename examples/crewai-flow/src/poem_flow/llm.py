"""The crew's model: a real one when configured (MODEL or OPENAI_API_KEY), else a deterministic stand-in.

The stand-in answers in CrewAI's own format with a poem of the asked length, so that the flow runs its real steps
(crew, task, events) with no network and the same result every time.
"""

import os
import re

from crewai import LLM
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context


def crew_llm():
    if os.environ.get("MODEL") or os.environ.get("OPENAI_API_KEY"):
        return LLM(model=os.environ.get("MODEL", "gpt-4o-mini"))
    return DeterministicLLM(model="crewd/deterministic")


LINES = [
    "CrewAI hands each agent a task and a name.",
    "The writer writes, and the flow keeps score.",
    "No model was called, yet the poem came.",
    "Each run ends the way it ran before.",
    "And crewd streams every step out the door.",
]


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
            self._emit_call_started_event(messages=messages, tools=tools, from_task=from_task, from_agent=from_agent)
            prompt = messages if isinstance(messages, str) else "\n".join(str(m.get("content", "")) for m in messages)
            found = re.search(r"sentence count of (\d+)", prompt)
            count = int(found.group(1)) if found else 1
            answer = "Thought: I now know the final answer\nFinal Answer: " + " ".join(LINES[:count])
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(answer.split())}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
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
