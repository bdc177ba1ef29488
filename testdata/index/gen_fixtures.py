#!/usr/bin/env python3
"""Make the shard-index and snapshot fixtures (FORMAT.md I1-I5, SPEC.md
"Inputs"), byte by byte, independently of libst. Each directory is one case;
MANIFEST.tsv lists: the PATH to open, ok/error, a substring the message must
contain, and what is broken.

Run:  python3 testdata/index/gen_fixtures.py
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
rows = []


def st_bytes(tensors):
    """tensors: list of (name, dtype, shape, bytes); canonical enough."""
    hdr, data, off = {}, b"", 0
    for name, dt, shape, blob in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(blob)]}
        data += blob
        off += len(blob)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


SHARD1 = [("a.weight", "F32", [2], f32(1, 2)), ("b.weight", "F32", [1], f32(3))]
SHARD2 = [("c.weight", "F32", [3], f32(4, 5, 6))]
N1, N2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
GOOD_MAP = {"a.weight": N1, "b.weight": N1, "c.weight": N2}


def case(name, files, path, expect, needle, comment):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for fname, content in files.items():
        with open(os.path.join(d, fname), "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
    rows.append((name + ("/" + path if path else ""), expect, needle, comment))


def index(weight_map=GOOD_MAP, total=24, extra=None):
    obj = {"metadata": {"total_size": total}, "weight_map": weight_map}
    if extra:
        obj.update(extra)
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


two = {N1: st_bytes(SHARD1), N2: st_bytes(SHARD2)}
case("sharded", dict(two, **{"model.safetensors.index.json": index(), "config.json": "{}"}),
     "", "ok", "", "a snapshot directory with two shards and an index")
case("sharded_by_index", dict(two, **{"model.safetensors.index.json": index()}),
     "model.safetensors.index.json", "ok", "", "the index path itself")
case("single", {"model.safetensors": st_bytes(SHARD1 + SHARD2), "config.json": "{}"},
     "", "ok", "", "a snapshot directory with model.safetensors")
case("single_other_name", {"weights.safetensors": st_bytes(SHARD1)},
     "", "ok", "", "a directory whose only .safetensors file has another name")
case("custom_index", dict(two, **{"custom.safetensors.index.json": index()}),
     "", "ok", "", "a directory whose only index has another name")
case("empty_dir", {"README.md": "nothing here"}, "", "notfound", "no model.safetensors",
     "a directory without weights")
case("two_files", {"x.safetensors": st_bytes(SHARD1), "y.safetensors": st_bytes(SHARD2)},
     "", "notfound", "2 .safetensors files", "two files and no index: ambiguous")
case("missing_shard", {N1: st_bytes(SHARD1), "model.safetensors.index.json": index()},
     "", "error", "refers to missing shard 'model-00002-of-00002.safetensors'", "I5: a shard is missing")
case("bad_shard", {N1: st_bytes(SHARD1), N2: st_bytes(SHARD2)[:-4], "model.safetensors.index.json": index()},
     "", "format", "4 bytes missing", "I5: a shard is truncated")
case("not_listed", dict(two, **{"model.safetensors.index.json": index({"a.weight": N1, "c.weight": N2}, total=24)}),
     "", "error", "'b.weight', which the index does not list", "I3: a tensor in a shard is not listed")
case("wrong_shard", dict(two, **{"model.safetensors.index.json": index(dict(GOOD_MAP, **{"c.weight": N1, "zz": N2}))}),
     "", "error", "tensor 'c.weight' is not in shard", "I3: a tensor listed in the wrong shard")
case("absolute_name", dict(two, **{"model.safetensors.index.json": index(dict(GOOD_MAP, **{"c.weight": "/etc/passwd.safetensors"}))}),
     "", "error", "not a plain file name", "I2: an absolute shard path")
case("dotdot_name", dict(two, **{"model.safetensors.index.json": index(dict(GOOD_MAP, **{"c.weight": "../x.safetensors"}))}),
     "", "error", "not a plain file name", "I2: a shard outside the directory")
case("bad_suffix", dict(two, **{"model.safetensors.index.json": index(dict(GOOD_MAP, **{"c.weight": "model.bin"}))}),
     "", "error", "does not end in .safetensors", "I2: a shard that is not a .safetensors file")
case("no_weight_map", dict(two, **{"model.safetensors.index.json": '{"metadata": {"total_size": 24}}'}),
     "", "error", "no \"weight_map\"", "I1: no weight_map")
case("not_json", dict(two, **{"model.safetensors.index.json": '{"weight_map": {'}),
     "", "error", "not valid JSON", "I1: the index is not JSON")
case("value_not_string", dict(two, **{"model.safetensors.index.json": index(dict(GOOD_MAP, **{"c.weight": 2}))}),
     "", "error", "not a file name string", "I1: a weight_map value that is a number")
case("dup_listing", dict(two, **{"model.safetensors.index.json":
     '{"metadata":{"total_size":24},"weight_map":{"a.weight":"%s","b.weight":"%s","c.weight":"%s","c.weight":"%s"}}' % (N1, N1, N2, N2)}),
     "", "error", "listed twice", "I3: a tensor listed twice")
# Problems only a full check reports (loaders read weight_map only).
case("bad_total", dict(two, **{"model.safetensors.index.json": index(total=25)}),
     "", "checkonly", "total_size is 25, but the shards hold 24", "I4: total_size is wrong")
case("no_total", dict(two, **{"model.safetensors.index.json": '{"metadata": {}, "weight_map": %s}' % json.dumps(GOOD_MAP)}),
     "", "checkonly", "no total_size", "I1: metadata without total_size")
case("float_total", dict(two, **{"model.safetensors.index.json": '{"metadata": {"total_size": 24.5}, "weight_map": %s}' % json.dumps(GOOD_MAP)}),
     "", "checkonly", "not a non-negative integer", "I1: total_size with a fraction")

with open(os.path.join(HERE, "MANIFEST.tsv"), "w") as f:
    f.write("# path\texpect\tmessage substring\twhat is broken (made by gen_fixtures.py)\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
print(len(rows), "cases")
