"""hot_pages: the pages a forked child wrote are read back, and a later child copies them ahead of its run."""

import ctypes
import json
import os
import resource

from crewd_runner import hot_pages

PAGE = hot_pages.PAGE


def page_buffer(pages):
    """A buffer of the parent's, page-aligned, with every page written (so each is present before the fork)."""
    raw = bytearray(b"x" * ((pages + 1) * PAGE))
    base = ctypes.addressof((ctypes.c_char * len(raw)).from_buffer(raw))
    offset = -base % PAGE
    return raw, base + offset, offset


def in_child(action):
    """Runs `action` in a forked child and returns what it returned (JSON)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            os.write(write_end, json.dumps(action()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while data := os.read(read_end, 1 << 16):
        chunks.append(data)
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def write_pages(raw, offset, pages):
    for page in pages:
        raw[offset + page * PAGE] = ord("y")


def faults_writing(raw, offset, pages):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    write_pages(raw, offset, pages)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def covered(ranges, address):
    return any(start <= address < start + length for start, length in ranges)


def test_a_child_reads_back_the_pages_it_wrote_and_not_the_others():
    raw, base, offset = page_buffer(64)
    regions = hot_pages.writable_regions()

    def child():
        write_pages(raw, offset, [*range(8), *range(30, 34)])
        return hot_pages.held_ranges(regions)

    ranges = in_child(child)
    assert all(covered(ranges, base + page * PAGE) for page in [*range(8), *range(30, 34)])
    assert not any(covered(ranges, base + page * PAGE) for page in range(12, 26))
    assert not any(covered(ranges, base + page * PAGE) for page in range(40, 64))


def test_a_child_that_populated_the_ranges_first_writes_them_without_copying():
    raw, base, offset = page_buffer(256)
    ranges = [(base, 256 * PAGE)]

    def cold():
        return faults_writing(raw, offset, range(256))

    def warm():
        hot_pages.populate(ranges)
        return faults_writing(raw, offset, range(256))

    assert in_child(cold) >= 256
    assert in_child(warm) < 64  # the interpreter's own first writes in the child remain
    assert raw[offset] == ord("x")  # the parent's pages are its own still


def test_populating_stops_when_told_and_leaves_the_rest_to_be_copied_on_write():
    raw, base, offset = page_buffer(256)
    ranges = [(base, 256 * PAGE)]

    def stopped():
        hot_pages.populate(ranges, stop=lambda: True)
        return faults_writing(raw, offset, range(256))

    assert in_child(stopped) >= 256


def test_reports_are_kept_only_within_the_regions_and_bounded():
    regions = [(0x10000, 0x20000), (0x40000, 0x50000)]
    reported = [(0x10000, PAGE), (0x1F000, 2 * PAGE), (0x30000, PAGE), (0x40000, 0x10000), (0x41000, 0)]
    assert hot_pages.within(reported, regions) == [(0x10000, PAGE), (0x40000, 0x10000)]
    huge = [(0x10000, hot_pages.MAX_BYTES + PAGE)]
    assert hot_pages.within(huge, [(0x10000, 0x10000 + 2 * hot_pages.MAX_BYTES)]) == []


def test_ranges_cross_a_socket_as_bytes_and_only_touching_ones_merge():
    # A page apart stay apart: the page between, never written, would be copied by every child ahead of its run.
    ranges = [(0x10000, PAGE), (0x10000 + PAGE, PAGE), (0x10000 + 3 * PAGE, PAGE), (0x90000, 3 * PAGE)]
    merged = hot_pages._merged(ranges)
    assert merged == [(0x10000, 2 * PAGE), (0x10000 + 3 * PAGE, PAGE), (0x90000, 3 * PAGE)]
    assert hot_pages.decode(hot_pages.encode(merged)) == merged
    assert hot_pages.decode(hot_pages.encode(merged)[:-3]) == merged[:2]


def test_populating_asks_whether_to_stop_once_a_chunk_not_once_a_range():
    _raw, base, _offset = page_buffer(64)  # _raw keeps the pages mapped
    ranges = [(base + page * PAGE, PAGE) for page in range(0, 64, 2)]
    asked = []

    def counted():
        hot_pages.populate(ranges, stop=lambda: bool(asked.append(1)))
        return len(asked)

    assert in_child(counted) == 1
