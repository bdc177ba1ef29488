#!/usr/bin/env python3
"""bad/dup_storage.bin and bad/dup_pickle.bin: state.bin (torch.save's zip,
made by gen_torch.py) with one member written twice, the second copy
different. torch.load reads the last of two equal names (zipfile and
PyTorch's reader keep the last central directory entry), libst would
read the first: such a file has two readings, and libst refuses it.
Python's zipfile writes the duplicate with a "Duplicate name" warning.
Needs no torch: the members are copied as they are.

Run: /usr/bin/python3 testdata/torch/gen_dup.py
"""
import os
import warnings
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "state.bin")

# pickle protocol 2 of {}: what torch.load would return for the state dict
EMPTY_DICT = b"\x80\x02}q\x00."


def with_duplicate(out, member, second):
    with zipfile.ZipFile(SRC) as zs, zipfile.ZipFile(out, "w") as zd:
        for info in zs.infolist():
            zd.writestr(zipfile.ZipInfo(info.filename), zs.read(info.filename))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Duplicate name: ..."
            zd.writestr(zipfile.ZipInfo(member), second(zs.read(member)))


with_duplicate(os.path.join(HERE, "bad", "dup_storage.bin"), "state/data/0",
               lambda first: b"\xff" * len(first))
with_duplicate(os.path.join(HERE, "bad", "dup_pickle.bin"), "state/data.pkl",
               lambda first: EMPTY_DICT)
