"""A crew and a graph whose deterministic models report token usage, for the runner's usage tests."""

from typing import Any, TypedDict

from crewai import Agent, Crew, Task
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langgraph.graph import END, START, StateGraph

CALL_USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "cached_prompt_tokens": 20}


class MeteredLLM(BaseLLM):
    """Answers at once, and reports each call's usage as a provider would: on the completed event (unless `silent`,
    as CrewAI's async streaming calls used to be) and in the crew's own token count."""

    silent: bool = False

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
            answer = "Thought: I now know the final answer\nFinal Answer: done"
            self._track_token_usage_internal(dict(CALL_USAGE))
            self._emit_call_completed_event(
                response=answer,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=None if self.silent else dict(CALL_USAGE),
            )
            return answer


def _crew(silent):
    llm = MeteredLLM(model="gpt-4o-mini", silent=silent)
    writer = Agent(role="Writer", goal="Write", backstory="Brief.", llm=llm, max_retry_limit=0)
    tasks = [
        Task(name=name, description=f"Write the {name}", expected_output="One line", agent=writer)
        for name in ("title", "summary")
    ]
    return Crew(agents=[writer], tasks=tasks)


def metered_crew():
    return _crew(silent=False)


def silent_crew():
    return _crew(silent=True)


GRAPH_USAGE = {
    "input_tokens": 50,
    "output_tokens": 8,
    "total_tokens": 58,
    "input_token_details": {"cache_read": 10},
    "output_token_details": {"reasoning": 3},
}


class MeteredChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, with usage_metadata on its answer, and on the last chunk when streamed (as
    OpenAI's models do with stream_usage)."""

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        chunks = list(super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs))
        for index, chunk in enumerate(chunks):
            if index == len(chunks) - 1:
                message = AIMessageChunk(content=chunk.message.content, id=chunk.message.id, usage_metadata=GRAPH_USAGE)
                chunk = ChatGenerationChunk(message=message)
            yield chunk

    @property
    def _llm_type(self):
        return "metered-fake"

    def _get_ls_params(self, stop=None, **kwargs):
        return {"ls_provider": "fake", "ls_model_name": "fake-metered", "ls_model_type": "chat"}


class State(TypedDict, total=False):
    answers: list[str]


def _model():
    return MeteredChatModel(messages=iter([AIMessage(content="one two three", usage_metadata=GRAPH_USAGE)]))


async def invoked(state: State) -> dict[str, Any]:
    answer = await _model().ainvoke("hello")
    return {"answers": [*state.get("answers", []), str(answer.content)]}


async def streamed(state: State) -> dict[str, Any]:
    text = ""
    async for chunk in _model().astream("hello"):
        text += str(chunk.content)
    return {"answers": [*state.get("answers", []), text]}


builder = StateGraph(State)
builder.add_node("invoked", invoked)
builder.add_node("streamed", streamed)
builder.add_edge(START, "invoked")
builder.add_edge("invoked", "streamed")
builder.add_edge("streamed", END)
metered_graph = builder.compile()
