"""Puts CrewAI's events back in the order they were emitted.

CrewAI calls synchronous handlers on a thread pool, so two events emitted a microsecond apart can reach their handlers
in either order. Each event carries its `emission_sequence`; the relay holds an event for a short moment and writes the
lowest sequence first.
"""

import heapq
import itertools
import threading
import time

HOLD_SECONDS = 0.1


class OrderedRelay:
    def __init__(self, emitter, hold_seconds=HOLD_SECONDS):
        self._emitter = emitter
        self._hold = hold_seconds
        self._heap = []
        self._arrival = itertools.count()
        self._condition = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="crewd-relay", daemon=True)
        self._thread.start()

    def put(self, sequence, event_type, data):
        with self._condition:
            arrival = next(self._arrival)
            # Events without a sequence keep their arrival order, after those that have one.
            key = (0, sequence, arrival) if sequence is not None else (1, arrival, arrival)
            heapq.heappush(self._heap, (key, time.monotonic(), event_type, data))
            self._condition.notify()

    def close(self):
        """Writes every event still held, in order."""
        with self._condition:
            self._closing = True
            self._condition.notify()
        self._thread.join()

    def _run(self):
        while True:
            with self._condition:
                ready = self._next_ready()
                while ready is None and not (self._closing and not self._heap):
                    self._condition.wait(self._wait_seconds())
                    ready = self._next_ready()
                if ready is None:
                    return
            self._emitter.emit(ready[2], ready[3])

    def _next_ready(self):
        if not self._heap:
            return None
        if self._closing or time.monotonic() - self._heap[0][1] >= self._hold:
            return heapq.heappop(self._heap)
        return None

    def _wait_seconds(self):
        if not self._heap:
            return None
        return max(0.0, self._hold - (time.monotonic() - self._heap[0][1]))
