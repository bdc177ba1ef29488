#!/usr/bin/python3
"""Make the Hugging Face cache trees of tests/cli/verify.sh and what
`stinfo --verify` must say about each, without libst.

Every tree is laid out as huggingface_hub lays out its cache
(file_download.py, _tree_cache.py): blobs/<sha256> for LFS files,
blobs/<git blob sha1> for files stored in git, snapshots/<commit>/<path>
as relative links ../../blobs/<hash> (one more ../ per subfolder),
refs/<branch> holding a commit, trees/<commit>.json listing the files.
Hashes are Python's hashlib; git blob ids are sha1(b"blob <size>\\0" +
bytes), as `git hash-object` computes them.

Each case breaks one thing (or nothing) and the expected stdout, stderr
and exit code are written to tests/golden/verify/<case>.{out,err,rc}; the
wording is the one stinfo documents, the numbers and hashes are the ones
this script knows it planted.

What cannot be committed is made by the test at run time: the 50 MiB
blobs (make_blob.c writes big.head and splitmix64 bytes; big.json gives
the hashes computed here with numpy + hashlib) and the FIFOs.

Run from anywhere: /usr/bin/python3 testdata/verify/gen_verify.py
"""
import hashlib
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
GOLDEN = os.path.join(HERE, "..", "..", "tests", "golden", "verify")

# Problem kinds in the order libst sorts problems of one path.
KIND = {k: i + 1 for i, k in enumerate([
    "corrupt", "truncated", "dangling-link", "absolute-link", "escaping-link",
    "replaced-link", "incomplete", "missing-snapshot", "missing-file",
    "not-regular", "unreadable", "bad-name", "bad-listing", "invalid"])}

C1 = "1" * 40
C2 = "2" * 40
C3 = "3" * 40
C4 = "4" * 40


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def git_id(b):
    return hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] -> file bytes (compact JSON)."""
    hdr, data = {}, b""
    if metadata:
        hdr["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape,
                     "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def f32(values):
    return np.asarray(values, dtype="<f4").tobytes()


def is_lfs(path):
    return path.endswith(".safetensors") or path.endswith(".bin")


class Repo:
    """One models--ORG--NAME folder being built."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        self.blobs = {}       # name -> bytes
        self.read = set()     # blob names stinfo reads (hashed)
        os.makedirs(os.path.join(self.dir, "blobs"))

    def blob_name(self, path, content):
        return sha256(content) if is_lfs(path) else git_id(content)

    def snapshot(self, commit, files, tree=True, links=True):
        """files: {path: bytes}. Returns {path: blob name}."""
        names = {}
        listing = {}
        for path, content in files.items():
            bn = self.blob_name(path, content)
            names[path] = bn
            dst = os.path.join(self.dir, "snapshots", commit, path)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if links:
                self.blobs[bn] = content
                with open(os.path.join(self.dir, "blobs", bn), "wb") as f:
                    f.write(content)
                up = "../" * (2 + path.count("/"))
                os.symlink(up + "blobs/" + bn, dst)
                self.read.add(bn)
            else:
                with open(dst, "wb") as f:
                    f.write(content)
            info = {"size": len(content), "blob_id": git_id(content)}
            if is_lfs(path):
                info["lfs_sha256"] = sha256(content)
                info["lfs_size"] = len(content)
            listing[path] = info
        if tree:
            os.makedirs(os.path.join(self.dir, "trees"), exist_ok=True)
            with open(os.path.join(self.dir, "trees", commit + ".json"),
                      "w") as f:
                json.dump({"format_version": 1,
                           "files": {p: listing[p] for p in sorted(listing)}},
                          f, indent=1)
        return names

    def ref(self, branch, commit):
        p = os.path.join(self.dir, "refs", branch)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(commit)  # huggingface_hub writes no newline


def tiny_model(seed):
    rng = np.random.default_rng(seed)
    return safetensors([
        ("h.0.w", "F32", [2, 3], f32(rng.standard_normal(6))),
        ("h.1.w", "F32", [2, 3], f32(rng.standard_normal(6))),
        ("wte", "F32", [4], f32(rng.standard_normal(4))),
    ], {"format": "pt"})


CONFIG = b'{"model_type": "gpt2", "n_layer": 2}\n'
CONFIG2 = b'{"model_type": "gpt2", "n_layer": 2, "n_head": 1}\n'


def sharded_files(seed):
    rng = np.random.default_rng(seed)
    s1 = safetensors([("a", "F32", [8], f32(rng.standard_normal(8)))])
    s2 = safetensors([("b", "F32", [16], f32(rng.standard_normal(16)))])
    index = json.dumps({"metadata": {"total_size": 8 * 4 + 16 * 4},
                        "weight_map": {"a": "model-00001-of-00002.safetensors",
                                       "b": "model-00002-of-00002.safetensors"}},
                       indent=2).encode() + b"\n"
    return {"model-00001-of-00002.safetensors": s1,
            "model-00002-of-00002.safetensors": s2,
            "model.safetensors.index.json": index, "config.json": CONFIG}


def gguf_file():
    """GGUF v3 as ggml's docs/gguf.md lays it out: one string key, one
    F32 tensor of 4 elements, data aligned to 32 bytes."""
    def gstr(b):
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, 1)
    out += gstr(b"general.architecture") + struct.pack("<I", 8) + gstr(b"llama")
    out += gstr(b"w") + struct.pack("<I", 1) + struct.pack("<Q", 4)
    out += struct.pack("<IQ", 0, 0)  # GGML_TYPE_F32, offset 0
    out += b"\0" * (-len(out) % 32)
    return out + f32([1.0, 2.0, 3.0, 4.0])


class Case:
    def __init__(self, name, cmd_path=None):
        self.name = name
        self.root = os.path.join(CASES, name)
        os.makedirs(self.root)
        self.problems = []   # (path, kind, what)
        self.files = 0
        self.bytes = 0
        self.unverified = 0
        self.layout = "cache"
        self.repos = 0
        self.notes = []
        self.path = cmd_path or name

    def repo(self, name="models--t--m"):
        self.repos += 1
        return Repo(self.root, name)

    def count(self, repo):
        self.files += len(repo.read)
        self.bytes += sum(len(repo.blobs[b]) for b in repo.read)

    def problem(self, rel, kind, what):
        self.problems.append((os.path.join(self.name, rel), kind, what))

    def write(self):
        rows = sorted(self.problems, key=lambda p: (p[0], KIND[p[1]],
                                                    p[0] + ": " + p[2]))
        err = "".join("stinfo: %s: %s\n" % (p, w) for p, _, w in rows)
        n = len(rows)
        head = "%d problem%s" % (n, "" if n == 1 else "s") if n else "OK"
        extra = ""
        if self.unverified:
            extra += ", %d with no hash to compare against" % self.unverified
        if self.layout == "cache":
            extra += ", %d repositor%s" % (self.repos,
                                           "y" if self.repos == 1 else "ies")
        extra += "".join(", " + x for x in self.notes)
        out = "%s: %s (%s; %d file%s read, %d bytes hashed%s)\n" % (
            self.path, head, self.layout, self.files,
            "" if self.files == 1 else "s", self.bytes, extra)
        os.makedirs(GOLDEN, exist_ok=True)
        base = os.path.join(GOLDEN, self.name)
        with open(base + ".out", "w") as f:
            f.write(out)
        with open(base + ".err", "w") as f:
            f.write(err)
        with open(base + ".rc", "w") as f:
            f.write("%d\n" % (1 if n else 0))


def snap(commit, path):
    return "models--t--m/snapshots/%s/%s" % (commit, path)


def main():
    shutil.rmtree(CASES, ignore_errors=True)
    shutil.rmtree(GOLDEN, ignore_errors=True)
    os.makedirs(CASES)

    # clean: four repositories, every kind of file; two revisions of one
    # share their weights blob, which is read once.
    c = Case("clean")
    r = c.repo("models--t--tiny")
    r.snapshot(C1, {"model.safetensors": tiny_model(1), "config.json": CONFIG})
    r.ref("main", C1)
    c.count(r)
    r = c.repo("models--t--shared")
    w = tiny_model(2)
    r.snapshot(C2, {"model.safetensors": w, "config.json": CONFIG})
    r.snapshot(C3, {"model.safetensors": w, "config.json": CONFIG2})
    r.ref("main", C3)
    r.ref("refs/pr/1", C2)
    c.count(r)
    r = c.repo("models--t--gitonly")  # only small git-stored files
    r.snapshot(C1, {"config.json": CONFIG, "README.md": b"# tiny\n",
                    "tokenizer/vocab.txt": b"a\nb\nc\n"})
    r.ref("main", C1)
    c.count(r)
    r = c.repo("models--t--sharded")
    r.snapshot(C4, sharded_files(3))
    r.ref("main", C4)
    c.count(r)
    c.write()

    # The 50 MiB blobs: a header written here, data made at test time.
    n_data = 50 * 1024 * 1024
    hdr = json.dumps({"w": {"dtype": "F32", "shape": [3200, 4096],
                            "data_offsets": [0, n_data]}},
                     separators=(",", ":")).encode()
    head = struct.pack("<Q", len(hdr)) + hdr
    seed, flip = 2024, len(head) + 31_457_281
    state = (np.arange(1, n_data // 8 + 1, dtype=np.uint64) *
             np.uint64(0x9e3779b97f4a7c15) + np.uint64(seed))
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    z = z ^ (z >> np.uint64(31))
    data = bytearray(z.astype("<u8").tobytes()[:n_data])
    big = head + bytes(data)
    data[flip - len(head)] ^= 1
    flipped = head + bytes(data)
    with open(os.path.join(HERE, "big.head"), "wb") as f:
        f.write(head)
    good = sha256(big)
    with open(os.path.join(HERE, "big.json"), "w") as f:
        json.dump({"data_bytes": n_data, "seed": seed, "flip": flip,
                   "sha256": good, "flipped_sha256": sha256(flipped)},
                  f, indent=1)
        f.write("\n")

    # big-clean / flipped: the 50 MiB blob (made by the test) intact, then
    # with one bit of one byte flipped: only its hash can tell.
    for name, content in (("big-clean", big), ("flipped", flipped)):
        c = Case(name)
        r = c.repo()
        names = r.snapshot(C1, {"model.safetensors": big,
                                "config.json": CONFIG})
        os.remove(os.path.join(r.dir, "blobs", names["model.safetensors"]))
        r.blobs[good] = content
        r.ref("main", C1)
        c.count(r)
        if content is flipped:
            c.problem("models--t--m/blobs/" + good, "corrupt",
                      "corrupt: sha256 of its %d bytes is %s, its name says %s"
                      % (len(big), sha256(flipped), good))
        c.write()

    # truncated: the second shard lost its last 10 bytes; the listing
    # gives its size, the format check sees the data cut short.
    c = Case("truncated")
    r = c.repo()
    files = sharded_files(4)
    names = r.snapshot(C1, files)
    r.ref("main", C1)
    s2 = files["model-00002-of-00002.safetensors"]
    cut = s2[:-10]
    bn = names["model-00002-of-00002.safetensors"]
    with open(os.path.join(r.dir, "blobs", bn), "wb") as f:
        f.write(cut)
    r.blobs[bn] = cut
    c.count(r)
    # Sizes are compared first: a blob whose size is not the listing's is
    # not hashed (only its header is read, for the format check).
    c.bytes -= len(cut)
    c.problem("models--t--m/blobs/" + bn, "truncated",
              "truncated: holds %d of its %d bytes (trees/%s.json); not hashed"
              % (len(cut), len(s2), C1))
    n_hdr = struct.unpack("<Q", s2[:8])[0]
    need, have = len(s2) - 8 - n_hdr, len(cut) - 8 - n_hdr
    c.problem(snap(C1, "model-00002-of-00002.safetensors"), "invalid",
              "file truncated: tensors need %d data bytes but the file has "
              "%d after the header (%d bytes missing)"
              % (need, have, need - have))
    c.write()

    # incomplete: downloads left unfinished, old and new naming.
    c = Case("incomplete")
    r = c.repo()
    r.snapshot(C1, {"model.safetensors": tiny_model(5), "config.json": CONFIG})
    r.ref("main", C1)
    c.count(r)
    for etag, size in (("a" * 64, 1000), ("b" * 64 + ".0badf00d", 17)):
        with open(os.path.join(r.dir, "blobs", etag + ".incomplete"),
                  "wb") as f:
            f.write(b"\0" * size)
        c.problem("models--t--m/blobs/%s.incomplete" % etag, "incomplete",
                  "unfinished download (%d bytes so far); huggingface_hub "
                  "resumes it on the next download, or it can be deleted"
                  % size)
    c.write()

    # Link problems: each in its own cache, beside a sound file.
    def linked(name, target, kind, what):
        c = Case(name)
        r = c.repo()
        r.snapshot(C1, {"config.json": CONFIG})
        r.ref("main", C1)
        os.symlink(target, os.path.join(r.dir, "snapshots", C1,
                                        "model.safetensors"))
        c.count(r)
        c.problem(snap(C1, "model.safetensors"), kind, what)
        return c

    linked("dangling", "../../blobs/" + "c" * 64, "dangling-link",
           "dangling symlink: '../../blobs/%s' does not exist" % ("c" * 64)
           ).write()
    linked("absolute", "/etc/passwd", "absolute-link",
           "absolute symlink to '/etc/passwd' (the cache links by relative "
           "paths); not followed").write()
    c = linked("escaping", "../../../../outside.safetensors", "escaping-link",
               "symlink to '../../../../outside.safetensors' leads out of "
               "the cache; not followed")
    c.write()
    # A file the escaping link would reach from the case's copy in the test.
    with open(os.path.join(CASES, "outside.safetensors"), "wb") as f:
        f.write(tiny_model(6))

    # replaced: a write through the snapshot path turned a link into a
    # regular file; its content still matches the listing.
    c = Case("replaced")
    r = c.repo()
    m = tiny_model(7)
    names = r.snapshot(C1, {"model.safetensors": m, "config.json": CONFIG})
    r.ref("main", C1)
    p = os.path.join(r.dir, "snapshots", C1, "model.safetensors")
    os.remove(p)
    with open(p, "wb") as f:
        f.write(m)
    c.count(r)
    c.files += 1
    c.bytes += len(m)
    c.problem(snap(C1, "model.safetensors"), "replaced-link",
              "a regular file where the cache links to blobs/ (something "
              "wrote through the snapshot path); checked against its listing")
    c.write()

    # missing-ref: a branch names a commit that was never downloaded.
    c = Case("missing-ref")
    r = c.repo()
    r.snapshot(C1, {"model.safetensors": tiny_model(8), "config.json": CONFIG})
    r.ref("main", C1)
    r.ref("dev", C2)
    c.count(r)
    c.problem("models--t--m/refs/dev", "missing-snapshot",
              "names commit %s, which has no snapshot folder" % C2)
    c.write()

    # missing-file: the listing names a file the snapshot lacks.
    c = Case("missing-file")
    r = c.repo()
    tok = b'{"version": "1.0"}\n'
    r.snapshot(C1, {"model.safetensors": tiny_model(9), "config.json": CONFIG,
                    "tokenizer.json": tok})
    r.ref("main", C1)
    os.remove(os.path.join(r.dir, "snapshots", C1, "tokenizer.json"))
    os.remove(os.path.join(r.dir, "blobs", git_id(tok)))
    r.read.discard(git_id(tok))
    c.count(r)
    c.problem(snap(C1, "tokenizer.json"), "missing-file",
              "listed in trees/%s.json (%d bytes) but missing" % (C1, len(tok)))
    c.write()

    # nosymlink: a cache made without links (Windows): the files sit in
    # snapshots/ and are checked against the listing.
    for name, bad in (("nosymlink", False), ("nosymlink-corrupt", True)):
        c = Case(name)
        r = c.repo()
        m = tiny_model(10)
        r.snapshot(C1, {"model.safetensors": m, "config.json": CONFIG},
                   links=False)
        r.ref("main", C1)
        c.files, c.bytes = 2, len(m) + len(CONFIG)
        c.notes.append("a cache made without symlinks")
        if bad:
            p = os.path.join(r.dir, "snapshots", C1, "config.json")
            worse = CONFIG.replace(b"2", b"3")
            with open(p, "wb") as f:
                f.write(worse)
            c.problem(snap(C1, "config.json"), "corrupt",
                      "corrupt: git blob id of its %d bytes is %s, "
                      "trees/%s.json says %s"
                      % (len(worse), git_id(worse), C1, git_id(CONFIG)))
        c.write()

    # A plain folder with a SHA256SUMS sidecar, clean and broken.
    for name in ("sidecar", "sidecar-bad"):
        c = Case(name)
        c.layout = "folder"
        c.repos = 0
        m = tiny_model(11)
        files = {"model.safetensors": m, "config.json": CONFIG,
                 "sub/notes.txt": b"notes\n"}
        for path, content in files.items():
            os.makedirs(os.path.dirname(os.path.join(c.root, path)),
                        exist_ok=True)
            with open(os.path.join(c.root, path), "wb") as f:
                f.write(content)
        sums = dict((p, sha256(b)) for p, b in files.items())
        if name == "sidecar-bad":
            sums["gone.bin"] = sha256(b"gone")
            sums["config.json"] = sha256(CONFIG2)
            c.problem("gone.bin", "missing-file",
                      "listed in SHA256SUMS but missing")
            c.problem("config.json", "corrupt",
                      "corrupt: sha256 of its %d bytes is %s, SHA256SUMS says "
                      "%s" % (len(CONFIG), sha256(CONFIG), sha256(CONFIG2)))
        with open(os.path.join(c.root, "SHA256SUMS"), "w") as f:
            for p in sorted(sums):
                f.write("%s  %s\n" % (sums[p], p))
        c.files = 3
        c.bytes = sum(len(b) for b in files.values())
        c.write()
        # What stinfo --hash prints for the folder: sha256sum's lines.
        if name == "sidecar":
            with open(os.path.join(GOLDEN, "hash-sidecar.out"), "w") as f:
                for p in sorted(files):
                    f.write("%s  %s\n" % (sha256(files[p]), p))
            # --hash --json on the weights file: per-tensor digests.
            h = struct.unpack("<Q", m[:8])[0]
            hdr = json.loads(m[8:8 + h])
            base = 8 + h
            rows = []
            for t, info in sorted(((k, v) for k, v in hdr.items()
                                   if k != "__metadata__"),
                                  key=lambda kv: kv[1]["data_offsets"][0]):
                b, e = info["data_offsets"]
                rows.append('    {"name": "%s", "sha256": "%s"}'
                            % (t, sha256(m[base + b:base + e])))
            path = "sidecar/model.safetensors"
            with open(os.path.join(GOLDEN, "hash-tensors.out"), "w") as f:
                f.write('{"path": "%s", "files": [\n' % path)
                f.write('  {"path": "%s", "size": %d, "sha256": "%s", '
                        '"tensors": [\n' % (path, len(m), sha256(m)))
                f.write(",\n".join(rows) + "\n  ]}\n]}\n")

    # gguf: a plain folder holding a small valid GGUF (version 3, one F32
    # tensor), with its sidecar; the test cuts a copy short to see the
    # GGUF check run on it.
    c = Case("gguf")
    c.layout = "folder"
    g = gguf_file()
    with open(os.path.join(c.root, "model.gguf"), "wb") as f:
        f.write(g)
    with open(os.path.join(c.root, "SHA256SUMS"), "w") as f:
        f.write("%s  model.gguf\n" % sha256(g))
    c.files, c.bytes = 1, len(g)
    c.write()

    # torch: a PyTorch checkpoint (testdata/torch/state.bin, made there by
    # torch.save) as a repository's pytorch_model.bin; the test cuts a
    # copy short to see the PyTorch check run on it.
    c = Case("torch")
    r = c.repo()
    with open(os.path.join(HERE, "..", "torch", "state.bin"), "rb") as f:
        state = f.read()
    r.snapshot(C1, {"pytorch_model.bin": state, "config.json": CONFIG})
    r.ref("main", C1)
    c.count(r)
    c.write()

    # fifo: the test plants FIFOs in snapshots/ and blobs/; they are
    # reported and never opened (opening one would block).
    c = Case("fifo")
    r = c.repo()
    r.snapshot(C1, {"model.safetensors": tiny_model(12), "config.json": CONFIG})
    r.ref("main", C1)
    c.count(r)
    c.problem("models--t--m/blobs/" + "f" * 64, "not-regular",
              "not a regular file (a FIFO, device or socket); skipped, not "
              "read")
    c.problem(snap(C1, "pipe.safetensors"), "not-regular",
              "not a regular file (a FIFO, device or socket); skipped, not "
              "read")
    c.write()


if __name__ == "__main__":
    main()
