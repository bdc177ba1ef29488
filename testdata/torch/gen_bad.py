#!/usr/bin/env python3
"""More files every PyTorch reader must refuse (bad/), beside those of
gen_formats.py: each hostile or broken case of issue 12 in the formats
it applies to (zip, legacy, tar), and pickles that reach a callable
through opcodes other than GLOBAL + REDUCE. tests/cli/torch_bad.sh lists
what each must make the tools say.

  {legacy,tar}_eval, _popen, tar_system   builtins.eval, subprocess.Popen,
      os.system through REDUCE; each payload (torch.load runs it) makes a
      file pwned-NAME in the working directory
  zip4_system, legacy4_system   os.system in a protocol-4 pickle (STACK_GLOBAL)
  inst, obj, newobj, ext   os.system reached by INST, OBJ, NEWOBJ, and an
      EXT1 code from copyreg's registry (hand-written pickles in a zip)
  {legacy,tar}_recursive  a dictionary inside itself
  list_recursive   a list inside itself, beside the tensors: read (no
      list is ever walked), the list left out like any other value
  {legacy,tar}_stride_outside  a view reaching past its storage
  tar_missing_storage, tar_huge_storage   a tensor on a storage the file
      lacks; a storage of 2**40 elements in a 10 kB file
  stored_past_end   a stored (uncompressed) storage member declaring 1 GiB
      in a file of a few hundred bytes
  tar_truncated, tar_checksum   a tar cut short; a header's checksum wrong
  bomb_pickle       data.pkl deflated, declaring its real 80 bytes but
      inflating to 16 MiB (a zip bomb that lies about its size)
  bomb_storage      a storage member the same way: 12 bytes declared,
      16 MiB inside; a plain open reads no storage, every read does
  bomb_declared     data.pkl declaring 4 GiB - 1 (more than any pickle
      of a state dict) from 16 kB
  ../../tests/fuzz/corpus/{torch,legacy,tar}/seed-bad-*  the fuzz targets'
      inputs cut from these files (the zip bombs with 1 MiB of zeros, not
      16, to keep the corpus small)
Run:  /usr/bin/python3 testdata/torch/gen_bad.py
"""
import builtins
import collections
import io
import os
import struct
import subprocess
import tarfile
import zipfile
import zlib

import torch

from stfixture import fuzz_legacy_seed, fuzz_tar_seed, write_tar

HERE = os.path.dirname(os.path.abspath(__file__))
BAD = os.path.join(HERE, "bad")
os.makedirs(BAD, exist_ok=True)


def b(name):
    return os.path.join(BAD, name)


class Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


legacy = {"_use_new_zipfile_serialization": False}
w = torch.ones(3)

# ---- callables through REDUCE, in every format ----------------------------
# Were a payload run, it would leave a file "pwned-NAME" in the working
# directory (torch_bad.sh runs the tools in an empty one and looks).
def touch(name):
    return "touch pwned-" + name


def evals(name):
    return "open('pwned-%s', 'w')" % name


torch.save({"w": w, "x": Reduce(builtins.eval, (evals("legacy_eval"),))},
           b("legacy_eval.bin"), **legacy)
torch.save({"w": Reduce(subprocess.Popen, (touch("legacy_popen").split(),))},
           b("legacy_popen.bin"), **legacy)
write_tar(b("tar_eval.bin"), {"w": w, "x": Reduce(builtins.eval, (evals("tar_eval"),))})
write_tar(b("tar_popen.bin"), {"w": Reduce(subprocess.Popen, (touch("tar_popen").split(),))})
write_tar(b("tar_system.bin"), {"w": w, "x": Reduce(os.system, (touch("tar_system"),))})
torch.save({"w": w, "x": Reduce(os.system, (touch("zip4_system"),))}, b("zip4_system.bin"),
           pickle_protocol=4)
torch.save({"w": w, "x": Reduce(os.system, (touch("legacy4_system"),))}, b("legacy4_system.bin"),
           pickle_protocol=4, **legacy)


# ---- hand-written pickles in a zip -------------------------------------------
def zip_with_pickle(path, pkl):
    """A torch.save zip of {"w": ones(3)} whose data.pkl is pkl."""
    buf = io.BytesIO()
    torch.save({"w": w}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zs, \
            zipfile.ZipFile(path, "w") as zd:
        for info in zs.infolist():
            data = pkl if info.filename.endswith("/data.pkl") else zs.read(info.filename)
            zd.writestr(zipfile.ZipInfo(info.filename), data)


def ustr(text):
    """BINUNICODE."""
    return b"X" + struct.pack("<I", len(text)) + text.encode()


zip_with_pickle(b("inst.bin"), b"(" + ustr(touch("inst")) + b"ios\nsystem\n.")
zip_with_pickle(b("obj.bin"), b"(cos\nsystem\n" + ustr(touch("obj")) + b"o.")
zip_with_pickle(b("newobj.bin"), b"\x80\x02cos\nsystem\n" + ustr(touch("newobj")) + b"\x85\x81.")
zip_with_pickle(b("ext.bin"), b"\x80\x02\x82\x01.")

# ---- recursive structures ------------------------------------------------
loop = {}
loop["me"] = loop
torch.save({"a": w, "b": loop}, b("legacy_recursive.bin"), **legacy)
tloop = {"a": w}
tloop["b"] = tloop
write_tar(b("tar_recursive.bin"), tloop, flatten=False)
lst = [1]
lst.append(lst)
torch.save({"a": w, "b": lst}, b("list_recursive.bin"))

# ---- views past their storage ------------------------------------------------
outside = Reduce(torch._utils._rebuild_tensor_v2, (
    torch.arange(4.0).storage(), 0, (4, 4), (4, 1), False, collections.OrderedDict()))
torch.save({"w": outside}, b("legacy_stride_outside.bin"), **legacy)
write_tar(b("tar_stride_outside.bin"), {"w": torch.arange(4.0)},
          edit_tensor=lambda i, r: (r[0], (4, 4), (4, 1), 0))
write_tar(b("tar_missing_storage.bin"), {"w": torch.arange(4.0)},
          edit_tensor=lambda i, r: (r[0] + 7, r[1], r[2], r[3]))
write_tar(b("tar_huge_storage.bin"), {"w": torch.arange(4.0)},
          edit_count=lambda key, n: 1 << 40)

# ---- broken tar containers ---------------------------------------------------
write_tar(b("tar_truncated.bin"), {"w": torch.arange(1000.0)})
with open(b("tar_truncated.bin"), "rb") as f:
    blob = bytearray(f.read())
with open(b("tar_truncated.bin"), "wb") as f:
    f.write(blob[:len(blob) // 2])
write_tar(b("tar_checksum.bin"), {"w": w})
with open(b("tar_checksum.bin"), "rb") as f:
    blob = bytearray(f.read())
assert tarfile.open(b("tar_checksum.bin")).getnames()
blob[0] ^= 0x20        # the first header's name: its checksum no longer holds
with open(b("tar_checksum.bin"), "wb") as f:
    f.write(blob)


# ---- zip bombs ---------------------------------------------------------------
def lie(path, member, declared, stored=False):
    """Make member's local and central headers declare this uncompressed
    size (and compressed size too, for a stored member)."""
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    assert blob[info.header_offset:info.header_offset + 4] == b"PK\x03\x04"
    struct.pack_into("<I", blob, info.header_offset + 22, declared)
    if stored:
        struct.pack_into("<I", blob, info.header_offset + 18, declared)
    cd = blob.index(b"PK\x01\x02")
    while blob[cd + 46:cd + 46 + len(member)] != member.encode():
        cd = blob.index(b"PK\x01\x02", cd + 4)
    struct.pack_into("<I", blob, cd + 24, declared)
    if stored:
        struct.pack_into("<I", blob, cd + 20, declared)
    with open(path, "wb") as f:
        f.write(blob)


def deflated_zip(path, members):
    """members: (name, bytes, deflate?) in order."""
    with zipfile.ZipFile(path, "w") as z:
        for name, data, deflate in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z.writestr(info, data)


buf = io.BytesIO()
torch.save({"w": w}, buf)
with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
    parts = [(n, z.read(n)) for n in z.namelist()]
top = parts[0][0].split("/")[0]
pkl = dict(parts)[top + "/data.pkl"]
MiB16 = 16 << 20
deflated_zip(b("bomb_pickle.bin"),
             [(n, d + (b"\0" * MiB16 if n.endswith("data.pkl") else b""),
               n.endswith("data.pkl")) for n, d in parts])
lie(b("bomb_pickle.bin"), top + "/data.pkl", len(pkl))
deflated_zip(b("bomb_storage.bin"),
             [(n, d + (b"\0" * MiB16 if n.endswith("/data/0") else b""),
               n.endswith("/data/0")) for n, d in parts])
lie(b("bomb_storage.bin"), top + "/data/0", 12)
deflated_zip(b("bomb_declared.bin"),
             [(n, d + (b"\0" * MiB16 if n.endswith("data.pkl") else b""),
               n.endswith("data.pkl")) for n, d in parts])
lie(b("bomb_declared.bin"), top + "/data.pkl", 0xFFFFFFFF)
deflated_zip(b("stored_past_end.bin"), [(n, d, False) for n, d in parts])
lie(b("stored_past_end.bin"), top + "/data/0", 1 << 30, stored=True)
for name in ("bomb_pickle.bin", "bomb_storage.bin", "bomb_declared.bin"):
    assert os.path.getsize(b(name)) < 64 << 10, name
assert zlib.compress(b"\0" * MiB16)        # (zlib: what zipfile deflates with)

# ---- fuzz seeds ----------------------------------------------------------------
FUZZ = os.path.join(HERE, "..", "..", "tests", "fuzz", "corpus")
for name in ("inst", "obj", "newobj", "ext", "zip4_system", "stored_past_end",
             "list_recursive"):
    with open(b(name + ".bin"), "rb") as f:
        data = f.read()
    with open(os.path.join(FUZZ, "torch", "seed-bad-" + name), "wb") as f:
        f.write(b"\0" + data)          # mode 0: a whole file
for name, member, declared in (("bomb_pickle", "data.pkl", len(pkl)),
                               ("bomb_storage", "data/0", 12)):
    small = b("fuzz.tmp")
    deflated_zip(small, [(n, d + (b"\0" * (1 << 20) if n.endswith(member) else b""),
                          n.endswith(member)) for n, d in parts])
    lie(small, top + "/" + member, declared)
    with open(small, "rb") as f:
        data = f.read()
    os.remove(small)
    with open(os.path.join(FUZZ, "torch", "seed-bad-" + name), "wb") as f:
        f.write(b"\0" + data)
for name in ("legacy_eval", "legacy_popen", "legacy4_system", "legacy_recursive",
             "legacy_stride_outside"):
    fuzz_legacy_seed(b(name + ".bin"), os.path.join(FUZZ, "legacy", "seed-bad-" + name))
for name in ("tar_eval", "tar_system", "tar_recursive", "tar_stride_outside",
             "tar_missing_storage", "tar_huge_storage"):
    fuzz_tar_seed(b(name + ".bin"), os.path.join(FUZZ, "tar", "seed-bad-" + name))

# torch.load itself refuses what it can tell is broken (the rest it would run).
for name in ("tar_truncated.bin", "tar_checksum.bin"):
    try:
        torch.load(b(name))
    except Exception:
        pass
    else:
        raise SystemExit(name + ": torch.load read it")
print("ok")
