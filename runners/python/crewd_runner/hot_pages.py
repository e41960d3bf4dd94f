"""The pages a run writes, learned from one child and copied ahead by the next.

A forked child shares the server's memory until it writes to it: then the kernel copies each page on its first write.
Python writes to every object it touches (reference counts), so a crew's first run in a child pays thousands of such
copies, about as much as the crew's own work. A child that ran reads back which of the server's pages it now holds a
copy of (/proc/self/pagemap: present and exclusively mapped); the next child, forked ahead of its run, copies those
pages while it waits (madvise MADV_POPULATE_WRITE), off the run's path. Where the kernel offers neither (before Linux
5.14, or /proc hidden), nothing is learned and children fault as before.
"""

from __future__ import annotations

import array
import bisect
import ctypes
import os
import re
from collections.abc import Callable, Iterator

# (start, end) of a mapping; (address, length) of a run of pages.
Regions = list[tuple[int, int]]
Ranges = list[tuple[int, int]]
Madvise = Callable[[int, int, int], int]

PAGE = os.sysconf("SC_PAGE_SIZE")
MADV_POPULATE_WRITE = 23
MADV_COLLAPSE = 25
HUGE_PAGE = 2 << 20
# A range list longer than this is cut: it bounds what one spare copies and what crosses its socket (16 bytes each).
MAX_RANGES = 8192
# What one spare copies at most: its memory beside the server's.
MAX_BYTES = 64 << 20
# What populate copies between two looks at whether to stop: about a millisecond's work.
POPULATE_CHUNK = 1 << 20
# pagemap entry, top byte: bit 63 (present) and bit 56 (exclusively mapped).
_HELD = 0x81
_HELD_TABLE = bytes(0x31 if value & _HELD == _HELD else 0x30 for value in range(256))


def writable_regions() -> Regions:
    """The process's private writable mappings, as (start, end): what a child shares with the server until written."""
    regions: Regions = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                name = fields[5] if len(fields) > 5 else ""
                if fields[1] != "rw-p" or (name.startswith("[") and name != "[heap]"):
                    continue
                start, end = (int(bound, 16) for bound in fields[0].split("-"))
                regions.append((start, end))
    except OSError:
        return []
    return regions


def held_ranges(regions: Regions) -> Ranges:
    """(address, length) of the pages in `regions` this process holds a copy of, merged and capped."""
    ranges: Ranges = []
    try:
        with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            for start, end in regions:
                pagemap.seek(start // PAGE * 8)
                entries = pagemap.read((end - start) // PAGE * 8)
                held = entries[7::8].translate(_HELD_TABLE)
                runs = re.finditer(b"1+", held)
                ranges.extend((start + run.start() * PAGE, (run.end() - run.start()) * PAGE) for run in runs)
    except OSError:
        return []
    return _merged(ranges)[:MAX_RANGES]


def _merged(ranges: Ranges) -> Ranges:
    """Touching ranges as one. Not ranges a page or two apart: the gap's pages, copied by every child ahead, were
    then held by the next learning run and reported as written (a run of the echo graph: 2,900 pages copied instead
    of 2,200, at about 4 µs each, more than the calls saved)."""
    merged: Ranges = []
    for address, length in ranges:
        if merged and address <= merged[-1][0] + merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], address + length - merged[-1][0]))
        else:
            merged.append((address, length))
    return merged


def encode(ranges: Ranges) -> bytes:
    return array.array("Q", [value for pair in ranges for value in pair]).tobytes()


def decode(data: bytes) -> Ranges:
    values = array.array("Q")
    values.frombytes(data[: len(data) // 16 * 16])
    return list(zip(values[0::2], values[1::2], strict=True))


def within(ranges: Ranges, regions: Regions) -> Ranges:
    """The reported ranges that lie inside the server's writable regions, up to MAX_RANGES and MAX_BYTES: a report
    comes from a run, whose crew could have written anything on its socket."""
    starts = [start for start, _ in regions]
    kept: Ranges = []
    total = 0
    for address, length in ranges[:MAX_RANGES]:
        index = bisect.bisect_right(starts, address) - 1
        if length <= 0 or index < 0 or address + length > regions[index][1] or total + length > MAX_BYTES:
            continue
        kept.append((address, length))
        total += length
    return kept


def populate(ranges: Ranges, stop: Callable[[], bool] = lambda: False) -> None:
    """Copies the pages of `ranges` now, asking `stop()` after each POPULATE_CHUNK bytes whether to go on (not after
    each range: most are a few pages, and a poll per range cost as much as a tenth of the copying); a range no longer
    mapped, or a kernel without the call, is skipped."""
    if not ranges or _MADVISE is None:
        return
    since_asked = POPULATE_CHUNK
    for address, length in _chunks(ranges):
        if since_asked >= POPULATE_CHUNK:
            if stop():
                return
            since_asked = 0
        since_asked += length
        if _MADVISE(address, length, MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == 22:  # EINVAL: not offered
            return


def collapse(regions: Regions) -> int:
    """Moves the 2 MB-aligned parts of `regions` into huge pages (MADV_COLLAPSE, Linux 6.1 and newer, whatever the
    machine's THP setting); the bytes moved. Called once by a server that forks, after its imports: a fork copies
    one entry per huge page, or per run of pages of one (once a write split it), instead of one per 4 KB page, and
    a child's exit releases them alike. The kernel may refuse (no huge page free, an older kernel): then nothing
    changes."""
    if _MADVISE is None:
        return 0
    moved = 0
    for start, end in regions:
        first = -(-start // HUGE_PAGE) * HUGE_PAGE
        last = end // HUGE_PAGE * HUGE_PAGE
        if last > first and _MADVISE(first, last - first, MADV_COLLAPSE) == 0:
            moved += last - first
    return moved


def _chunks(ranges: Ranges) -> Iterator[tuple[int, int]]:
    for address, length in ranges:
        for offset in range(0, length, POPULATE_CHUNK):
            yield address + offset, min(POPULATE_CHUNK, length - offset)


def _madvise() -> Madvise | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


# Looked up once, in the server: each child forked ahead would otherwise load it again.
_MADVISE = _madvise()
