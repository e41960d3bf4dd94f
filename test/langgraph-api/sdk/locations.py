"""`Location` as the real langgraph-sdk follows it (CONTRACTS §14 "Streams"): an answer cut off on its way makes the
SDK fetch the run again where `Location` says, which it joins to its own base URL (the API's URL, prefix included).

Sync `runs.wait` cut before its body comes: the SDK rejoins at `Location` (`…/join`). Async `runs.stream` cut after
its first event: the SDK resumes at `Location` (`…/stream`) with `Last-Event-ID`, and no event comes twice. The cut
is made by a transport put under the SDK's own httpx client; everything else is the SDK's. Passes against
`langgraph dev` too.
"""

import asyncio
import json
import os
import re

import httpx
from shapes import clients, done

# A graph that stops at an interrupt, and its input: examples/langgraph-agent unless told.
GRAPH = os.environ.get("GRAPH", "agent")
QUESTION = json.loads(os.environ.get("INPUT", '{"question": "How many words?"}'))


class CutSync(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream) -> None:
        self.inner = inner

    def __iter__(self):
        raise httpx.ReadError("cut by the test before the body")
        yield b""  # a generator

    def close(self) -> None:
        self.inner.close()


class CutAfterFirstEvent(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self):
        seen = b""
        async for chunk in self.inner:
            seen += chunk
            end = re.search(rb"\r?\n\r?\n", seen)
            if end:
                yield seen[: end.end()]
                raise httpx.ReadError("cut by the test after the first event")
        yield seen

    async def aclose(self) -> None:
        await self.inner.aclose()


class Recording:
    """Cuts the first answer to a POST whose path ends with `ending`; records every request's method and path."""

    def __init__(self, inner, ending: str, cut) -> None:
        self.inner = inner
        self.ending = ending
        self.cut = cut
        self.seen: list[str] = []
        self.done = False

    def _cuts(self, request: httpx.Request) -> bool:
        self.seen.append(f"{request.method} {request.url.path}")
        hit = request.method == "POST" and request.url.path.endswith(self.ending)
        if hit and not self.done:
            self.done = True
            return True
        return False

    def _wrap(self, request, response):
        if not self._cuts(request):
            return response
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=self.cut(response.stream),
            request=request,
        )

    def handle_request(self, request):
        return self._wrap(request, self.inner.handle_request(request))

    async def handle_async_request(self, request):
        return self._wrap(request, await self.inner.handle_async_request(request))

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()


def wait_part(client) -> dict:
    thread = client.threads.create()["thread_id"]
    http = client.http.client
    recording = Recording(http._transport, "/runs/wait", CutSync)
    http._transport = recording
    values = client.runs.wait(thread, GRAPH, input=QUESTION)
    assert "__interrupt__" in values, values
    joins = [line for line in recording.seen if line.endswith("/join")]
    assert len(joins) == 1 and joins[0].startswith("GET "), recording.seen
    return {"wait_requests": recording.seen}


async def stream_part(client) -> dict:
    thread = (await client.threads.create())["thread_id"]
    http = client.http.client
    recording = Recording(http._transport, "/runs/stream", CutAfterFirstEvent)
    http._transport = recording
    events = [
        part.event
        async for part in client.runs.stream(
            thread,
            GRAPH,
            input=QUESTION,
            stream_mode=["updates"],
            stream_resumable=True,
        )
    ]
    assert events[0] == "metadata" and events.count("metadata") == 1, events
    assert "updates" in events, events
    resumed = [
        line
        for line in recording.seen
        if line.endswith("/stream") and line.startswith("GET ")
    ]
    assert len(resumed) >= 1, recording.seen
    return {"stream_requests": recording.seen, "stream_events": events}


def main() -> None:
    sync_client, async_client = clients()
    result = wait_part(sync_client)
    result.update(asyncio.run(stream_part(async_client)))
    done(result)


main()
