#!/usr/bin/env python3
"""Make the fixtures of every PyTorch checkpoint format libst reads, with
Debian's python3-torch (1.13), and for each the expected tensors: what
torch.load returns, made contiguous, written byte by byte as safetensors
(stfixture.py, not libst). Files:

  views.<fmt>.bin   one state dict of views and dtypes, saved as
      zip           torch.save (pickle protocol 2, the default)
      zip4          torch.save(..., pickle_protocol=4)
      legacy        torch.save(..., _use_new_zipfile_serialization=False)
      legacy4       the same with pickle protocol 4
      legacybig     legacy, with the system info of a big-endian machine
                    (little_endian False; torch writes storages little-
                    endian whatever the machine)
      zipbig        zip with a byteorder record "big" and every storage's
                    elements byte-swapped, as torch.save (2.0 and later)
                    writes on a big-endian machine; torch 1.13 knows no
                    such record, so its
                    expected values are those of views.zip.bin (newer
                    torch.load swaps them back to these)
      tar           the tar format of torch before 0.4 (members storages,
                    tensors, pickle), written here by hand from the
                    reader in torch/serialization.py (legacy_load);
                    torch.load reads it back and gives the expected file
  views.expected.safetensors   the tensors (aliases included: both names)
  ckpt.<fmt>.bin, ckpt.expected.safetensors  a training checkpoint
      {"state_dict": {...}, "epoch": 3, "optimizer": {...}} in zip and
      legacy form; the expected file holds the state dict's tensors under
      their own names
  storage_crc.bin   views.zip.bin with one byte of a storage flipped: it
      opens (storages are read in place), stinfo --check finds the CRC
  state.dedup.expected.safetensors  state.bin's tensors without the alias
      lm_head.weight, as stconvert writes them
  ../../tests/fuzz/corpus/{legacy,tar}/seed-*  the fuzz targets' inputs
      cut from the legacy and tar files above
  bad/*.bin         files every reader must refuse (see the end)
Run:  /usr/bin/python3 testdata/torch/gen_formats.py
"""
import collections
import os
import pickle
import struct
import sys
import zipfile

import torch

from stfixture import fuzz_legacy_seed, fuzz_tar_seed, write_expected, write_tar, \
    zip_storage_dtypes

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(1)


def p(*names):
    return os.path.join(HERE, *names)


# ---- the state dict -------------------------------------------------------
base = torch.randn(6, 8)
shared = torch.arange(24, dtype=torch.float64)
sd = collections.OrderedDict()
for name, dt in [("f64", torch.float64), ("f32", torch.float32),
                 ("f16", torch.float16), ("bf16", torch.bfloat16),
                 ("i64", torch.int64), ("i32", torch.int32),
                 ("i16", torch.int16), ("i8", torch.int8),
                 ("u8", torch.uint8)]:
    x = (torch.randn(3, 5) * 50).to(dt)
    sd[name] = x
    sd[name + ".t"] = x.t()                       # a transpose of its own
sd["bool"] = torch.tensor([[True, False, True], [False, False, True]])
sd["bool.t"] = sd["bool"].t()
sd["scalar"] = torch.tensor(-1.25)
sd["scalar_i64"] = torch.tensor(7)
sd["empty"] = torch.zeros(0, 3)
sd["empty_t"] = torch.zeros(4, 0).t()
sd["transposed"] = base.t()                    # strides (1, 8)
sd["sliced"] = base[1:5, 2:7]                  # offset 10, strides (8, 1)
sd["stepped"] = base[::2, 1::3]                # strides (16, 3)
sd["offset"] = base[3]                         # offset 24
sd["expanded"] = base[0:1, 0:4].expand(3, 4)   # stride 0
sd["expanded_col"] = base[:, 2:3].expand(6, 5)
sd["permuted"] = torch.randn(2, 3, 4).permute(2, 0, 1)
sd["shared_a"] = shared[0:12].view(3, 4)       # several tensors, one storage
sd["shared_b"] = shared[12:24].view(4, 3).t()
sd["shared_c"] = shared[5:9]
sd["alias"] = sd["transposed"]                 # an identical alias
sd["param"] = torch.nn.Parameter(torch.randn(2, 2))

FORMATS = {}


def save(name, obj, **kw):
    torch.save(obj, p(name), **kw)


def expected_of(path, out):
    got = torch.load(path)
    write_expected(out, {k: v for k, v in got.items()})
    return got


save("views.zip.bin", sd)
save("views.zip4.bin", sd, pickle_protocol=4)
save("views.legacy.bin", sd, _use_new_zipfile_serialization=False)
save("views.legacy4.bin", sd, _use_new_zipfile_serialization=False,
     pickle_protocol=4)
real_order = sys.byteorder
sys.byteorder = "big"           # only the system info record reads it
save("views.legacybig.bin", sd, _use_new_zipfile_serialization=False)
sys.byteorder = real_order
ref = expected_of(p("views.zip.bin"), p("views.expected.safetensors"))
for f in ("zip4", "legacy", "legacy4", "legacybig"):
    got = torch.load(p("views.%s.bin" % f))
    assert list(got) == list(ref)
    for k in ref:
        assert got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape
        assert torch.equal(got[k].contiguous().view(torch.uint8) if got[k].dim()
                           else got[k], ref[k].contiguous().view(torch.uint8)
                           if ref[k].dim() else ref[k]), (f, k)


# ---- big-endian zip -----------------------------------------------------
with zipfile.ZipFile(p("views.zip.bin")) as src:
    top, dtypes = zip_storage_dtypes(src)
    sizes = {k: torch.tensor([], dtype=d).element_size() for k, d in dtypes.items()}
    with zipfile.ZipFile(p("views.zipbig.bin"), "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            rel = info.filename[len(top) + 1:]
            if rel.startswith("data/"):
                es = sizes[rel[5:]]
                data = b"".join(data[i:i + es][::-1]
                                for i in range(0, len(data), es))
            dst.writestr(zipfile.ZipInfo(info.filename), data)
        # The record torch.save writes since 2.0 (1.13 writes none).
        dst.writestr(zipfile.ZipInfo(top + "/byteorder"), b"big")


# ---- tar (before 0.4): stfixture.write_tar -----------------------------
write_tar(p("views.tar.bin"), sd)
got = torch.load(p("views.tar.bin"))
for k in ref:
    assert got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape, k
    assert torch.equal(got[k], ref[k]), k

# ---- nested training checkpoints ------------------------------------------
inner = collections.OrderedDict([("enc.weight", torch.randn(3, 2).t()),
                                 ("enc.bias", torch.arange(3, dtype=torch.int32)),
                                 ("dec.weight", torch.randn(4))])
ckpt = {"state_dict": inner, "epoch": 3, "lr": 0.5, "name": "run",
        "optimizer": {"state": {0: {"step": 10}}, "param_groups": [{"lr": 0.5}]}}
save("ckpt.zip.bin", ckpt)
save("ckpt.legacy.bin", ckpt, _use_new_zipfile_serialization=False)
write_tar(p("ckpt.tar.bin"), ckpt)
got = torch.load(p("ckpt.zip.bin"))["state_dict"]
write_expected(p("ckpt.expected.safetensors"), dict(got))
for f in ("legacy", "tar"):
    other = torch.load(p("ckpt.%s.bin" % f))["state_dict"]
    assert all(torch.equal(other[k], got[k]) for k in got)

# state.bin (gen_torch.py) as a converter writes it: lm_head.weight is an
# alias of wte.weight (one storage, the same view) and is written once.
state = torch.load(p("state.bin"))
assert state["lm_head.weight"].data_ptr() == state["wte.weight"].data_ptr()
write_expected(p("state.dedup.expected.safetensors"),
               {k: v for k, v in state.items() if k != "lm_head.weight"})

# ---- fuzz seeds (tests/fuzz/corpus/{legacy,tar}) ------------------------
FUZZ = os.path.join(HERE, "..", "..", "tests", "fuzz", "corpus")
os.makedirs(os.path.join(FUZZ, "legacy"), exist_ok=True)
os.makedirs(os.path.join(FUZZ, "tar"), exist_ok=True)
for name in ("views.legacy", "views.legacy4", "ckpt.legacy"):
    fuzz_legacy_seed(p(name + ".bin"), os.path.join(FUZZ, "legacy", "seed-" + name))
for name in ("views.tar", "ckpt.tar"):
    fuzz_tar_seed(p(name + ".bin"), os.path.join(FUZZ, "tar", "seed-" + name))

# ---- files every reader must refuse (bad/) --------------------------------
# Each is refused with one line naming the file, exit 2, nothing run or
# written; tests/cli/torch.sh lists what each line says.
os.makedirs(p("bad"), exist_ok=True)


class Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


import builtins  # noqa: E402
import subprocess  # noqa: E402

save("bad/eval.bin", {"w": torch.ones(1), "x": Reduce(builtins.eval, ("1",))})
save("bad/popen.bin", {"w": Reduce(subprocess.Popen, (["true"],))})
save("bad/torch_fn.bin", {"w": Reduce(torch.ones, ((2,),))})
save("bad/legacy_system.bin", {"w": Reduce(os.system, ("true",))},
     _use_new_zipfile_serialization=False)
loop = {}
loop["me"] = loop
save("bad/recursive.bin", {"a": torch.ones(1), "b": loop})
# A view reaching past its storage: 16 elements of a 4-element storage.
save("bad/stride_outside.bin", {"w": Reduce(torch._utils._rebuild_tensor_v2, (
    torch.arange(4.0).storage(), 0, (4, 4), (4, 1), False,
    collections.OrderedDict()))})


def rezip(src, dst, change):
    """src's entries into dst, each (name, data) passed through change."""
    with zipfile.ZipFile(p(src)) as zs, zipfile.ZipFile(p(dst), "w") as zd:
        for info in zs.infolist():
            got = change(info.filename, zs.read(info.filename))
            if got is not None:
                zd.writestr(zipfile.ZipInfo(got[0]), got[1])


rezip("views.zip.bin", "bad/missing_storage.bin",
      lambda n, d: None if n.endswith("/data/3") else (n, d))
with open(p("views.zip.bin"), "rb") as f:
    blob = bytearray(f.read())
with open(p("bad/truncated_zip.bin"), "wb") as f:
    f.write(blob[: len(blob) // 2])
# A flipped byte inside data.pkl: its CRC-32 no longer matches.
at = blob.index(b"data.pkl") + len(b"data.pkl") + 40
blob[at] ^= 0x01
with open(p("bad/bad_crc.bin"), "wb") as f:
    f.write(blob)
# A flipped byte inside a storage read in place: only a full check
# (stinfo --check) reads it through its CRC.
with open(p("views.zip.bin"), "rb") as f:
    blob = bytearray(f.read())
with zipfile.ZipFile(p("views.zip.bin")) as z:
    info = z.getinfo("views.zip/data/0")
    # The local header's name and extra lengths (torch pads the extra).
    nl, xl = struct.unpack("<HH", blob[info.header_offset + 26:info.header_offset + 30])
    at = info.header_offset + 30 + nl + xl
blob[at] ^= 0x01
with open(p("storage_crc.bin"), "wb") as f:
    f.write(blob)
with open(p("views.legacy.bin"), "rb") as f:
    blob = f.read()
with open(p("bad/truncated_legacy.bin"), "wb") as f:
    f.write(blob[: len(blob) - 100])


def legacy(path, obj, keys, count=None):
    """A legacy stream by hand: obj's tensors' storages as persistent ids,
    then the storage keys listed and, for each, count (default: its size)
    elements of bytes."""
    stor = {}

    class P(pickle.Pickler):
        def persistent_id(self, o):
            if isinstance(o, torch.storage.TypedStorage):
                key = str(len(stor))
                stor[key] = o
                return ("storage", torch.FloatStorage, key, "cpu", o.size(), None)
            return None
    with open(path, "wb") as f:
        for v in (0x1950a86a20f9469cfc6c, 1001, {"little_endian": True}):
            pickle.dump(v, f, protocol=2)
        P(f, protocol=2).dump(obj)
        pickle.dump(keys(sorted(stor)), f, protocol=2)
        for k in keys(sorted(stor)):
            st = stor[k]
            f.write(struct.pack("<q", st.size() if count is None else count))
            f.write(torch.empty(0).set_(st).numpy().tobytes())


one = {"w": torch.ones(3)}
legacy(p("bad/legacy_missing_key.bin"), one, lambda ks: [])
legacy(p("bad/legacy_huge_storage.bin"), one, lambda ks: ks, count=1 << 40)
# A zip whose pickle says its 3-element storage holds 2**40 elements.
save("bad/huge_storage.bin", {"w": Reduce(torch._utils._rebuild_tensor_v2, (
    torch.ones(3).storage(), 0, (3,), (1,), False, collections.OrderedDict()))})
rezip("bad/huge_storage.bin", "bad/huge_storage.bin.tmp",
      lambda n, d: (n, d.replace(b"K\x03", b"\x8a\x06\x00\x00\x00\x00\x00\x01", 1))
      if n.endswith("data.pkl") else (n, d))
os.replace(p("bad/huge_storage.bin.tmp"), p("bad/huge_storage.bin"))
print("ok")
