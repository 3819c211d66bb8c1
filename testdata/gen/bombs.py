#!/usr/bin/env python3
"""Build hostile snapshot files (bombs) into a directory, for the hostile test.

    python3 testdata/gen/bombs.py OUTDIR [NAME...]

Never commit what it writes: cmd/snapview/hostile_test.go runs it at test time.
Each file is small (at most a few MB) and stands for one attack of issue 10; most
are made of valid snapshot data, so only the decoder's budgets stop them:

  laughs_32x9.pickle        allocator_settings nesting 9 levels of 32-key dicts
                            that all reference one memoized dict (32^9 paths)
  memo_seg_1e5x1e4.pickle   one memoized segment of 10^4 blocks referenced 10^5
                            times (10^9 blocks if expanded)
  entries.pickle.gz         a 54 MB gzip of one trace entry repeated (members
                            of a multi-member gzip, 15 GB decompressed)
  entries.pickle.gz.gz      the same inside a second gzip
  entries.pickle.xz         the same as concatenated xz streams
  string_6g.pickle.gz       one 6 GB string
  stack_open.pickle.gz      a stack that never closes (ints pushed forever)
  marks_open.pickle.gz      MARKs pushed forever
  entries.json.gz           JSON of one trace entry repeated
  memo_spread.pickle        LONG_BINPUT at indexes 64K apart (memo growth)
  entry_refs.pickle         one memoized entry appended 5*10^6 times by BINGET
  devices_1e5.pickle        10^5 devices' traces of one entry each
  frame_1mib.pickle         one 1 MiB frame name shared by 200 stacks
  filename_1mib.pickle      one frame of a 1 MiB file name shared by 200 stacks
  dup_pop.pickle.gz.gz      2^31 DUP+POP pairs on a shared entry dict
  bidi_class.pickle         a GLOBAL whose class name holds ESC and RLO

Issue 28's kinds (the cost sweeps build each at three sizes: sweep.py):

  long_digits.pickle        size, addr, time_us and max_split_size as 1 MiB
                            integers (LONG4, 2.5 million digits)
  memo_pad.pickle           16 MB of empty lists memoized and popped
  dict_4g.pickle.xz         an xz file whose block asks for a 4 GiB dictionary
  settings_pairs.pickle     allocator_settings with 10^6 pairs
  settings_key_8m.pickle    an allocator_settings key of 8 MiB
  key_shared_16m.pickle     one unknown 16 MiB key on 10^5 trace entries
                            (memoized: a 25 MB file)
  sizes_past_8e.pickle      two segments of 2^62 bytes (their sum wraps)
  devices_1e6.pickle        10^6 empty devices (one byte each)
"""
import gzip
import io
import lzma
import os
import pickle
import struct
import sys
import zlib

CHUNK = 16 << 20  # bytes of repeated data per compressed member


def op_str(s):
    b = s.encode()
    if len(b) < 256:
        return b"\x8c" + bytes([len(b)]) + b
    return b"X" + struct.pack("<I", len(b)) + b


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def head_traces():
    # {"segments": [], "device_traces": [[ ...
    return b"\x80\x04}(" + op_str("segments") + b"]" + op_str("device_traces") + b"](]"


ENTRY = (b"}(" + op_str("action") + op_str("alloc") + op_str("addr") + b"J\x00\x00\x00\x10"
         + op_str("size") + b"M\x00\x02" + op_str("stream") + b"K\x00"
         + op_str("time_us") + b"J\x01\x00\x00\x00" + op_str("frames") + b"]ua")


def repeated(unit, n=CHUNK):
    return unit * (n // len(unit))


def multi_gzip(head, unit, members):
    body = gz(repeated(unit))
    return gz(head) + body * members


def multi_xz(head, unit, streams):
    body = lzma.compress(repeated(unit), preset=1)
    return lzma.compress(head, preset=1) + body * streams


def laughs(width=32, depth=9):
    out = io.BytesIO()
    out.write(b"\x80\x04}(" + op_str("segments") + b"]" + op_str("allocator_settings"))
    # The innermost dict, memoized at 0; each level a dict of width keys
    # that all reference the level below (memo i).
    out.write(b"}(")
    for k in range(width):
        out.write(op_str("k%d" % k) + b"K" + bytes([k]))
    out.write(b"u\x94")  # MEMOIZE -> memo 0
    for level in range(1, depth):
        out.write(b"0}(")  # drop the reference on the stack, build the next
        for k in range(width):
            out.write(op_str("k%d" % k) + b"j" + struct.pack("<I", level - 1))
        out.write(b"u\x94")
    out.write(b"u.")
    return out.getvalue()


def memo_seg(refs=100_000, blocks=10_000):
    out = io.BytesIO()
    out.write(b"\x80\x04}(" + op_str("segments") + b"]")
    seg = {"device": 0, "address": 0x7F0000000000, "total_size": blocks * 512,
           "allocated_size": blocks * 512, "active_size": blocks * 512, "requested_size": blocks * 512,
           "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": [], "blocks": [{"address": 0x7F0000000000 + 512 * i, "size": 512, "requested_size": 512,
                                     "state": "active_allocated", "frames": []} for i in range(blocks)]}
    body = pickle.dumps(seg, protocol=4)
    # strip PROTO/FRAME and STOP: the dict's own opcodes, then memoize it
    # at a high index no inner object uses.
    body = body[2:-1]
    if body[:1] == b"\x95":
        body = body[9:]
    out.write(b"(" + body + b"r" + struct.pack("<I", 1 << 30))
    for _ in range(refs - 1):
        out.write(b"j" + struct.pack("<I", 1 << 30))
    out.write(b"e" + op_str("device_traces") + b"]u.")
    return out.getvalue()


def memo_spread(n=65_000):
    out = io.BytesIO()
    out.write(b"\x80\x04}(" + op_str("segments") + b"]")
    for i in range(n):
        out.write(b"r" + struct.pack("<I", (i + 1) * 65535))
    out.write(b"u.")
    return out.getvalue()


def entry_refs(n=5_000_000):
    out = io.BytesIO()
    out.write(head_traces() + ENTRY[:-1] + b"r" + struct.pack("<I", 7) + b"a")
    out.write(b"h\x07a" * n)
    out.write(b"eu.")
    return out.getvalue()


def devices(n=100_000):
    out = io.BytesIO()
    out.write(b"\x80\x04}(" + op_str("segments") + b"]" + op_str("device_traces") + b"]")
    # Each device its own list holding one memoized entry.
    out.write(b"(]" + ENTRY[:-1] + b"r" + struct.pack("<I", 1) + b"a")
    out.write(b"]j\x01\x00\x00\x00a" * (n - 1))
    out.write(b"eu.")
    return out.getvalue()


def frame_1mib(stacks=200, python=False):
    name = "f" + "<" * (1 << 20)
    big = {"filename": "/x/model.cpp", "line": 0, "name": name}
    if python:
        # A Python frame whose file name is 1 MiB of path elements.
        big = {"filename": "/x" * (1 << 19) + "/model.py", "line": 7, "name": "forward"}
    trace = []
    for i in range(stacks):
        fr = [{"filename": "/x/train.py", "line": i + 1, "name": "step"}, big]
        trace.append({"action": "alloc", "addr": 0x7F0000000000 + 512 * i, "size": 512,
                      "stream": 0, "time_us": 1000 + i, "frames": fr})
    seg = {"device": 0, "address": 0x7F0000000000, "total_size": 2 << 20, "allocated_size": 512 * stacks,
           "active_size": 512 * stacks, "requested_size": 512 * stacks, "stream": 0,
           "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
           "blocks": [{"address": 0x7F0000000000 + 512 * i, "size": 512, "requested_size": 512,
                       "state": "active_allocated", "frames": trace[i]["frames"]} for i in range(stacks)]
           + [{"address": 0x7F0000000000 + 512 * stacks, "size": (2 << 20) - 512 * stacks,
               "requested_size": 0, "state": "inactive", "frames": []}]}
    return pickle.dumps({"segments": [seg], "device_traces": [trace]}, protocol=4)


def dup_pop(pairs=1 << 31):
    head = head_traces() + ENTRY[:-1] + b"r" + struct.pack("<I", 3)
    unit = b"20"
    members = pairs * 2 // CHUNK
    inner = multi_gzip(head, unit, members) + gz(b"a" + b"j\x03\x00\x00\x00aeu.")
    return gz(inner)


def long_digits(n=1 << 20):
    wide = (1 << (8 * n - 9)) + 12345
    tr = [{"action": "alloc", "addr": 0x7F0000000000 + 512 * i, "size": 512, "stream": 0,
           "time_us": 1000 + i, "frames": []} for i in range(4)]
    tr[1]["size"], tr[2]["addr"], tr[3]["time_us"] = wide, wide, -wide
    return pickle.dumps({"segments": [], "device_traces": [tr],
                         "allocator_settings": {"max_split_size": wide}}, protocol=4)


def dict_4g():
    x = bytearray(lzma.compress(pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4),
                                format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_LZMA2, "preset": 1}]))
    hlen = (x[12] + 1) * 4
    bh = x[12:12 + hlen]
    i = bh.index(b"\x21\x01", 2)
    bh[i + 2] = 40  # dictionary code 40: 4 GiB - 1
    bh[-4:] = struct.pack("<I", zlib.crc32(bytes(bh[:-4])))
    x[12:12 + hlen] = bh
    return bytes(x)


def key_shared(n=1 << 24, entries=100_000):
    out = io.BytesIO()
    out.write(head_traces())
    for i in range(entries):
        out.write(ENTRY[:-2])  # the entry dict without its SETITEMS and APPEND
        if i == 0:
            out.write(op_str("k" * n) + b"r" + struct.pack("<I", 1 << 20))
        else:
            out.write(b"j" + struct.pack("<I", 1 << 20))
        out.write(b"K\x01ua")
    out.write(b"eu.")
    return out.getvalue()


def sizes_past():
    s = 1 << 62
    def seg(a):
        return {"device": 0, "address": a, "total_size": s, "allocated_size": s, "active_size": s,
                "requested_size": s, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                "is_expandable": False, "frames": [],
                "blocks": [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": []}]}
    return pickle.dumps({"segments": [seg(0x200000), seg(0x200000 + s)], "device_traces": [[]]}, protocol=4)


def main():
    out = sys.argv[1]
    want = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    makers = {
        "laughs_32x9.pickle": laughs,
        "memo_seg_1e5x1e4.pickle": memo_seg,
        "entries.pickle.gz": lambda: multi_gzip(head_traces(), ENTRY, 950),
        "entries.pickle.gz.gz": lambda: gz(multi_gzip(head_traces(), ENTRY, 3200)),
        "entries.pickle.xz": lambda: multi_xz(head_traces(), ENTRY, 700),
        "string_6g.pickle.gz": lambda: multi_gzip(
            b"\x80\x04}(" + op_str("segments") + b"]" + op_str("x") + b"\x8d" + struct.pack("<Q", 6 << 30), b"A", 384),
        "stack_open.pickle.gz": lambda: multi_gzip(b"\x80\x04", b"K\x01", 64),
        "marks_open.pickle.gz": lambda: multi_gzip(b"\x80\x04", b"(", 64),
        "entries.json.gz": lambda: multi_gzip(
            b'{"segments": [], "device_traces": [[',
            b'{"action": "alloc", "addr": 1, "size": 512, "stream": 0, "time_us": 1, "frames": []}, ', 1200),
        "memo_spread.pickle": memo_spread,
        "entry_refs.pickle": entry_refs,
        "devices_1e5.pickle": devices,
        "frame_1mib.pickle": frame_1mib,
        "filename_1mib.pickle": lambda: frame_1mib(python=True),
        "dup_pop.pickle.gz.gz": dup_pop,
        "bidi_class.pickle": lambda: b"\x80\x04cos\x1b]0;x\x07\nsys\xe2\x80\xaetem\n.",
        "long_digits.pickle": long_digits,
        "memo_pad.pickle": lambda: head_traces() + b"]\x940" * 5_000_000 + b"eu.",
        "dict_4g.pickle.xz": dict_4g,
        "settings_pairs.pickle": lambda: pickle.dumps(
            {"segments": [], "allocator_settings": {"k%d" % i: i for i in range(1_000_000)}}, protocol=4),
        "settings_key_8m.pickle": lambda: pickle.dumps(
            {"segments": [], "allocator_settings": {"k" * (8 << 20): 1, "max_split_size": -1}}, protocol=4),
        "key_shared_16m.pickle": key_shared,
        "sizes_past_8e.pickle": sizes_past,
        "devices_1e6.pickle": lambda: (b"\x80\x04}(" + op_str("segments") + b"]" + op_str("device_traces")
                                       + b"](" + b"]" * 1_000_000 + b"eu."),
    }
    for name, make in makers.items():
        if want and name not in want:
            continue
        with open(os.path.join(out, name), "wb") as f:
            f.write(make())


if __name__ == "__main__":
    main()
