"""The threads a run starts outside the worker: the reader of crewd's answers only on the run's first call
(store_channel), and no thread to shut the default executor down when none of its calls is left running (runloop)."""

import asyncio
import contextlib
import os
import threading

import pytest

from crewd_runner import runloop, store_channel


@pytest.fixture
def thread_starts(monkeypatch):
    """The names of the threads started from now on."""
    started = []
    start = threading.Thread.start

    def counted(thread):
        started.append(thread.name)
        return start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    return started


class Sink:
    def __init__(self, reply=None):
        self.events = []
        self.reply = reply

    def emit(self, event_type, data):
        self.events.append((event_type, data))
        if self.reply is not None:
            self.reply(data)


@pytest.fixture
def channel():
    """(read end as text, write end) of a pipe standing for the run's standard input."""
    read_fd, write_fd = os.pipe()
    lines = os.fdopen(read_fd, encoding="utf-8")
    yield lines, write_fd
    # The write end first: a reader blocked on the read end then sees its end (and lets go of it).
    with contextlib.suppress(OSError):
        os.close(write_fd)
    lines.close()


def test_no_answer_reader_without_a_call(channel, thread_starts):
    lines, _ = channel
    store_channel.read_answers(lines, store_channel.Answers())
    assert thread_starts == []


def test_the_first_call_starts_the_reader_and_gets_its_answer(channel, thread_starts):
    lines, write_fd = channel
    answers = store_channel.Answers()
    store_channel.read_answers(lines, answers)

    def reply(data):
        os.write(write_fd, b'{"answer": {"id": "%s", "result": 7}}\n' % data["id"].encode())

    sink = Sink(reply)
    assert answers.call(sink, {"op": "get"}) == 7
    assert answers.call(sink, {"op": "get"}) == 7
    assert thread_starts == ["crewd answers"]


def test_a_channel_closed_before_the_first_call_is_out_of_reach(channel):
    """As with a reader started with the run: the input had ended before the call, so the call is never sent."""
    lines, write_fd = channel
    os.write(write_fd, b'{"answer": {"id": "9", "result": 1}}\n')
    os.close(write_fd)
    answers = store_channel.Answers()
    store_channel.read_answers(lines, answers)
    sink = Sink()
    with pytest.raises(store_channel.ChannelClosed, match="its store is out of reach"):
        answers.call(sink, {"op": "get"})
    assert sink.events == []


def test_a_sync_call_leaves_no_thread_and_starts_only_its_own(thread_starts):
    before = threading.active_count()

    async def main():
        return await asyncio.get_running_loop().run_in_executor(None, threading.current_thread)

    thread = runloop.run(main())
    assert thread is not threading.current_thread() and thread.name.startswith("asyncio")
    assert len(thread_starts) == 1
    assert threading.active_count() == before
    # As after asyncio.run: the main thread's loop is set to none.
    with pytest.raises(RuntimeError):
        asyncio.get_event_loop()
    asyncio.set_event_loop_policy(None)


def test_a_call_still_running_at_the_end_is_waited_for_with_the_loop_turning():
    """A call that needs the loop to end (it waits for a coroutine of the loop's) keeps asyncio's way: the executor is
    shut down from a thread while the loop turns, rather than in the loop's thread, which would never end."""
    loop = runloop.RunLoop()
    go = threading.Event()

    def call():
        go.wait()
        return asyncio.run_coroutine_threadsafe(asyncio.sleep(0, "done"), loop).result()

    async def submit():
        return loop.run_in_executor(None, call)

    try:
        future = loop.run_until_complete(submit())
        go.set()
        loop.run_until_complete(loop.shutdown_default_executor())
        assert future.result() == "done"
        with pytest.raises(RuntimeError):
            loop.run_until_complete(submit())
    finally:
        loop.close()


def test_a_default_executor_set_by_the_run_is_used():
    from concurrent.futures import ThreadPoolExecutor

    own = ThreadPoolExecutor(thread_name_prefix="the-run's")

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(own)
        return await loop.run_in_executor(None, lambda: threading.current_thread().name)

    assert runloop.run(main()).startswith("the-run's")
    assert own._shutdown
    asyncio.set_event_loop_policy(None)
