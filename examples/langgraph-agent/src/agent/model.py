"""The agent's chat model: OpenAI when OPENAI_API_KEY is set, else a deterministic model that needs no network.

The deterministic model asks for the word_count tool on a new question, and answers once the tool has replied, so
the graph runs its real loop (model, tool, model) the same way every time.
"""

import os

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult


def chat_model(tools):
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI  # pip install 'agent[openai]'

        return ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini")).bind_tools(tools)
    return DeterministicChatModel()


class DeterministicChatModel(BaseChatModel):
    @property
    def _llm_type(self):
        return "deterministic"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Your message has {last.content} words.")
        else:
            reply = AIMessage(
                content="",
                tool_calls=[{"name": "word_count", "args": {"text": str(last.content)}, "id": f"call_{len(messages)}"}],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])
