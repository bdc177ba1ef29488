"""Shared by the fixture scripts of testdata/torch: a safetensors file
written byte by byte from PyTorch tensors (not by libst), the tar
checkpoint format of torch before 0.4, the dtype of each storage of a
zip checkpoint, and the fuzz targets' inputs cut from legacy and tar
files."""
import collections
import io
import json
import pickle
import struct
import tarfile

import torch

NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
         torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def raw(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_expected(path, tensors):
    """A safetensors file of the given name -> tensor dict, by hand."""
    hdr, data, off = {}, b"", 0
    for name in sorted(tensors):
        t = tensors[name]
        blob = raw(t)
        hdr[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                     "data_offsets": [off, off + len(blob)]}
        data += blob
        off += len(blob)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_tar(path, obj, pickle_protocol=2, flatten=True, edit_tensor=None,
              edit_count=None):
    """The tar layout torch.load's legacy_load reads, for dicts of tensors.
    For broken files: flatten=False pickles obj as it is (a dict inside
    itself); edit_tensor(i, (storage key, shape, stride, offset)) and
    edit_count(storage key, elements) change what tensor i's record and a
    storage's element count say."""
    storages, tensors = collections.OrderedDict(), collections.OrderedDict()

    def pid_tensor(t):
        st = t.storage()
        # The reader keys everything by int: int(persistent id).
        skey = storages[st.data_ptr()][0] if st.data_ptr() in storages else len(storages)
        if st.data_ptr() not in storages:
            storages[st.data_ptr()] = (skey, t.dtype, st)
        key = len(tensors) + 1000
        tensors[key] = (skey, t)
        return key

    class P(pickle.Pickler):
        def persistent_id(self, o):
            if isinstance(o, torch.Tensor):
                return pid_tensor(o)
            return None

    def flat(o):
        return collections.OrderedDict((k, v.detach() if isinstance(v, torch.Tensor)
                                        else flat(v) if isinstance(v, dict) else v)
                                       for k, v in o.items())
    pk = io.BytesIO()
    P(pk, protocol=pickle_protocol).dump(flat(obj) if flatten else obj)
    st_type = {torch.float64: torch.DoubleStorage, torch.float32: torch.FloatStorage,
               torch.float16: torch.HalfStorage, torch.int64: torch.LongStorage,
               torch.int32: torch.IntStorage, torch.int16: torch.ShortStorage,
               torch.int8: torch.CharStorage, torch.uint8: torch.ByteStorage,
               torch.bool: torch.BoolStorage, torch.bfloat16: torch.BFloat16Storage}
    t_type = {torch.float64: torch.DoubleTensor, torch.float32: torch.FloatTensor,
              torch.float16: torch.HalfTensor, torch.int64: torch.LongTensor,
              torch.int32: torch.IntTensor, torch.int16: torch.ShortTensor,
              torch.int8: torch.CharTensor, torch.uint8: torch.ByteTensor,
              torch.bool: torch.BoolTensor, torch.bfloat16: torch.BFloat16Tensor}
    sb = io.BytesIO()
    pickle.dump(len(storages), sb, protocol=pickle_protocol)
    for skey, dt, st in storages.values():
        pickle.dump((skey, "cpu", st_type[dt]), sb, protocol=pickle_protocol)
        es = torch.tensor([], dtype=dt).element_size()
        whole = torch.empty(0, dtype=dt).set_(st, 0, (st.size(),), (1,))
        raw = whole.view(torch.uint8).numpy().tobytes()
        n = len(raw) // es
        sb.write(struct.pack("<q", edit_count(skey, n) if edit_count else n))
        sb.write(raw)
    pickle.dump([], sb, protocol=pickle_protocol)
    tb = io.BytesIO()
    pickle.dump(len(tensors), tb, protocol=pickle_protocol)
    for i, (key, (skey, t)) in enumerate(tensors.items()):
        rec = (skey, tuple(t.shape), t.stride(), t.storage_offset())
        skey, shape, stride, offset = edit_tensor(i, rec) if edit_tensor else rec
        pickle.dump((key, skey, t_type[t.dtype]), tb, protocol=pickle_protocol)
        tb.write(struct.pack("<i", len(shape)) + b"\0\0\0\0")
        tb.write(struct.pack("<%dq" % len(shape), *shape))
        tb.write(struct.pack("<%dq" % len(shape), *stride))
        tb.write(struct.pack("<q", offset))
    with tarfile.open(path, "w:", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("sys_info", pickle.dumps({"little_endian": True})),
                           ("pickle", pk.getvalue()), ("tensors", tb.getvalue()),
                           ("storages", sb.getvalue())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def zip_storage_dtypes(zf):
    """(top folder, {storage key: dtype}) of an open torch.save zip, from
    the pickle's storage classes."""
    dtypes = {}

    class U(pickle.Unpickler):
        def find_class(self, mod, name):
            if mod == "torch" and name.endswith("Storage"):
                return getattr(torch, name)
            if mod == "torch._utils":
                return lambda *args: None   # tensors are not wanted here
            return super().find_class(mod, name)

        def persistent_load(self, pid):
            _, cls, key, _, _ = pid
            dtypes[key] = cls.dtype
            return torch.UntypedStorage(0)
    top = zf.namelist()[0].split("/")[0]
    U(io.BytesIO(zf.read(top + "/data.pkl"))).load()
    return top, dtypes


def fuzz_legacy_seed(src, dst):
    """fuzz_legacy's input: a legacy file after its first three pickles."""
    with open(src, "rb") as f:
        for _ in range(3):          # magic, protocol, system info
            pickle.load(f)
        rest = f.read()
    with open(dst, "wb") as f:
        f.write(rest)


def fuzz_tar_seed(src, dst):
    """fuzz_tar's input: two 16-bit lengths, then the members pickle,
    tensors and storages of a tar checkpoint."""
    with tarfile.open(src) as tar:
        m = {n: tar.extractfile(n).read() for n in ("pickle", "tensors", "storages")}
    with open(dst, "wb") as f:
        f.write(struct.pack("<HH", len(m["pickle"]), len(m["tensors"])))
        f.write(m["pickle"] + m["tensors"] + m["storages"])
