"""hot_pages: the pages a forked child wrote are read back, and a later child copies them ahead of its run."""

import ctypes
import json
import mmap
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


def anon_huge_kb(address):
    """AnonHugePages of the mapping that holds `address` (smaps)."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                start, end = (int(bound, 16) for bound in fields[0].split("-"))
                inside = start <= address < end
            elif inside and fields[0] == "AnonHugePages:":
                return int(fields[1])
    return 0


def test_collapse_moves_only_whole_huge_pages_of_a_region_and_keeps_what_they_hold():
    huge = hot_pages.HUGE_PAGE
    size = 5 * huge
    area = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    contents = bytes(range(256)) * (size // 256)
    area.write(contents)
    start = ctypes.addressof(ctypes.c_char.from_buffer(area))
    region_start = start + PAGE
    moved = hot_pages.collapse([(region_start, start + size)])
    aligned = (start + size) // huge * huge - -(-region_start // huge) * huge
    assert moved % huge == 0 and 0 <= moved <= aligned
    assert area[:] == contents
    if moved:  # the kernel could (Linux 6.1 and newer, a huge page free): the mapping holds huge pages now
        assert anon_huge_kb(region_start) * 1024 >= huge
