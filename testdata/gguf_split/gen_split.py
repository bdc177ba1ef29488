#!/usr/bin/python3
"""Make the split GGUF fixtures with gguf-py's writer (llama.cpp's own).

gpt2-0000k-of-00003.gguf: ../gguf/judge/expected-q8_0.gguf (a GPT-2 of 28
tensors) split by GGUFWriter(split_max_tensors=10): 10, 10 and 8 tensors,
the metadata in the first part, split.no / split.count / split.tensors.count
in each, as gguf-split writes them. whole.gguf: the same copy, unsplit, so
the tests can compare the set with one file. Both are checked here with
gguf-py's reader: the parts hold exactly the whole file's tensors, bytes
for bytes, and the split keys say what the set is.

The broken sets (MANIFEST.tsv: the path to give, the verdict, a substring of
the message) come from a small model of 6 F32 tensors, each part written
by GGUFWriter unsplit with its split keys added as gguf-split adds them
(split.no and split.count uint16, split.tensors.count int32; the first part
alone has the metadata):
  missing/     part 2 of 3 deleted
  extra/       a good set of 3, and beside it a part 1 of 2 left from another
               split and a part 4 "of 3"
  other_set/   part 2 is a part 2 of 4 (split.count 4) renamed into the set
  other_count/ part 3 says split.tensors.count 7 (a set of 7 tensors)
  bad_no/      part 2's split.no is 2 (part 3's number)
  dup/         tensor 'b' is in part 1 and in part 2
  count/       every part says split.tensors.count 8, the parts hold 6
  renamed/     part 1 named gpt2.gguf: its name does not say which part
  nokeys/      part 2 has no split keys (an unsplit file renamed)

Run: PYTHONPATH=/work/ref/llama.cpp/gguf-py python3 testdata/gguf_split/gen_split.py
"""
import os
import shutil

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, '..', 'gguf', 'judge', 'expected-q8_0.gguf')


def copy(reader, path, split_max_tensors=0):
    """gguf-py's gguf_new_metadata.py copy, optionally split."""
    arch = reader.fields['general.architecture'].contents()
    w = gguf.GGUFWriter(path, arch, split_max_tensors=split_max_tensors)
    for f in reader.fields.values():
        if f.name == 'general.architecture' or f.name.startswith('GGUF.'):
            continue
        vt = f.types[0]
        sub = f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), vt, sub_type=sub)
    for t in reader.tensors:
        w.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes,
                          t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in reader.tensors:
        w.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    w.close()


def good_set():
    src = gguf.GGUFReader(SRC)
    copy(src, os.path.join(HERE, 'whole.gguf'))
    copy(src, os.path.join(HERE, 'gpt2.gguf'), split_max_tensors=10)
    whole = gguf.GGUFReader(os.path.join(HERE, 'whole.gguf'))
    want = {t.name: (t.tensor_type, list(t.shape), bytes(t.data.tobytes()))
            for t in whole.tensors}
    got, counts = {}, []
    for k in range(3):
        r = gguf.GGUFReader(os.path.join(HERE, 'gpt2-%05d-of-00003.gguf' % (k + 1)))
        assert r.fields['split.no'].contents() == k
        assert r.fields['split.count'].contents() == 3
        assert r.fields['split.tensors.count'].contents() == 28
        assert ('general.name' in r.fields) == (k == 0)
        counts.append(len(r.tensors))
        for t in r.tensors:
            assert t.name not in got
            got[t.name] = (t.tensor_type, list(t.shape), bytes(t.data.tobytes()))
    assert counts == [10, 10, 8], counts
    assert got == want
    assert len(want) == 28


TINY = ['a', 'b', 'c', 'd', 'e', 'f']


def part(path, names, no, count, n_tensors, first=False, keys=True):
    w = gguf.GGUFWriter(path, 'tiny')
    if not first:
        # gguf-split's later parts hold only the split keys.
        w.kv_data[0].clear()
    else:
        w.add_name('tiny split fixture')
    if keys:
        w.add_uint16('split.no', no)
        w.add_uint16('split.count', count)
        w.add_int32('split.tensors.count', n_tensors)
    for i, n in enumerate(names):
        w.add_tensor(n, np.arange(8, dtype=np.float32) + 10 * TINY.index(n))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tiny_set(d, count=3, n_tensors=6, parts=None, name='gpt2'):
    os.makedirs(d, exist_ok=True)
    parts = parts or [TINY[0:2], TINY[2:4], TINY[4:6]]
    for k in range(count):
        part(os.path.join(d, '%s-%05d-of-%05d.gguf' % (name, k + 1, count)),
             parts[k], k, count, n_tensors, first=(k == 0))


def broken_sets():
    for d in ['missing', 'extra', 'other_set', 'other_count', 'bad_no', 'dup',
              'count', 'renamed', 'nokeys']:
        shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
    j = lambda *p: os.path.join(HERE, *p)
    tiny_set(j('missing'))
    os.remove(j('missing', 'gpt2-00002-of-00003.gguf'))
    tiny_set(j('extra'))
    part(j('extra', 'gpt2-00001-of-00002.gguf'), TINY[0:3], 0, 2, 6, first=True)
    part(j('extra', 'gpt2-00004-of-00003.gguf'), TINY[0:1], 3, 4, 6)
    tiny_set(j('other_set'))
    part(j('other_set', 'gpt2-00002-of-00003.gguf'), TINY[2:4], 1, 4, 6)
    tiny_set(j('other_count'))
    part(j('other_count', 'gpt2-00003-of-00003.gguf'), TINY[4:6], 2, 3, 7)
    tiny_set(j('bad_no'))
    part(j('bad_no', 'gpt2-00002-of-00003.gguf'), TINY[2:4], 2, 3, 6)
    tiny_set(j('dup'), n_tensors=7,
             parts=[TINY[0:2], TINY[1:4], TINY[4:6]])
    tiny_set(j('count'), n_tensors=8)
    tiny_set(j('renamed'))
    os.rename(j('renamed', 'gpt2-00001-of-00003.gguf'), j('renamed', 'gpt2.gguf'))
    tiny_set(j('nokeys'))
    part(j('nokeys', 'gpt2-00002-of-00003.gguf'), TINY[2:4], 0, 0, 0,
         keys=False)


good_set()
broken_sets()
