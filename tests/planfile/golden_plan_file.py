#!/usr/bin/env python3
"""The expected bytes of a small plan file, built from the layout in docs/plan-files.md alone
(no Tangram code): test_plan_file.c's `golden_bytes` compares tg_plan_file_write's output with
what this prints. Run it to regenerate the hex after a format change (and bump the version)."""
import hashlib
import struct
import sys
import zlib

# Version 2 adds tagged sections after the plan (none in this file); `golden_plan_file.py 1`
# prints the same file as version 1 wrote it.
VERSION = int(sys.argv[1]) if len(sys.argv) > 1 else 2

MAGIC = b"\x89TGPLAN\n"
# Records: (w, h, d, alignment, first, last, name or None); 1D, buffer, fp16.
records = [(100, 1, 1, 0, 0, 1, b"a"), (50, 1, 1, 0, 1, 2, None), (100, 1, 1, 0, 2, 3, b"conv/out")]
object_of = [0, 1, 0]
object_sizes = [(100, 1, 1), (50, 1, 1)]
source = b"tiny.tflite"
dims, mode, strategy, plan_strategy, fit = 1, 0, 6, 4, 0   # objects, best, greedy-by-size, best fit
storage, precision, policy, flags, alignment, total = 0, 1, 0, 1, 1, 150

fp = hashlib.sha256()
fp.update(struct.pack("<IQ", dims, len(records)))
for w, h, d, al, first, last, name in records:
    fp.update(struct.pack("<QQQQIIQ", w, h, d, al, first, last, len(name) if name is not None else 2**64 - 1))
    fp.update(name or b"")

table = b"".join(struct.pack("<QQQQIIII", w, h, d, al, first, last,
                             len(name) if name is not None else 0xFFFFFFFF, 0)
                 for w, h, d, al, first, last, name in records)
names = b"".join(name or b"" for *_, name in records)
plan = struct.pack("<%dI" % len(object_of), *object_of) + b"".join(struct.pack("<QQQ", *e) for e in object_sizes)
size = 128 + len(source) + len(table) + len(names) + len(plan) + 4
header = MAGIC + struct.pack("<IIQIIIIIIIIQQQQ", VERSION, flags, size, dims, mode, strategy, plan_strategy, fit,
                             storage, precision, policy, alignment, len(records), len(object_sizes), total)
header += fp.digest() + struct.pack("<II", len(source), 0)
assert len(header) == 128
body = header + source + table + names + plan
data = body + struct.pack("<I", zlib.crc32(body))
assert len(data) == size
print(data.hex())
