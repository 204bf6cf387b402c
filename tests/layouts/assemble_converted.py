#!/usr/bin/env python3
"""Rebuilds, byte for byte, the GGUF files that the real converters wrote from
the golden tiny checkpoints (tests/layouts/converted/README.md says which,
at which commit, with which command), for tests/test_converted.c.

    assemble_converted.py SET OUT

The repository holds each file's GGUF header (metadata and tensor index: the
bytes before the tensor data, in converted/headers.tar.xz) and the SHA-256
of the whole file (converted/manifest.json). The tensor data, the bulk of
each file, is the golden weights under the converter's transforms; it is
taken from make_layout.py's file of the same layout and type, tensor by
tensor by name, placed at the offsets the converter's header gives, with
the converter's zero padding. A file whose size or SHA-256 differs from the
converter's fails: the result is the converter's file or nothing.

SET: a key of manifest.json ("qwentts-f32-cv", ...). OUT: a folder, created,
that receives the set's files under the converter's names.
"""
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTED = os.path.join(HERE, "converted")

# GGUF value types (gguf.md): their fixed sizes; 8 is a string, 9 an array
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# tensor types the converters write here: bytes per element
TYPE_SIZE = {0: 4, 1: 2}


class Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def skip_value(self, t):
        if t == 8:
            n = self.take("Q")
            self.pos += n
        elif t == 9:
            et, n = self.take("I"), self.take("Q")
            if et in FIXED:
                self.pos += FIXED[et] * n
            else:
                for _ in range(n):
                    self.skip_value(et)
        else:
            self.pos += FIXED[t]


def tensor_index(buf):
    """(alignment, data offset, [(name, type, numel, offset)]) of a GGUF v3 header."""
    r = Reader(buf)
    magic, version, n_tensors, n_kv = r.take("4sIQQ")
    if magic != b"GGUF" or version != 3:
        raise SystemExit("not a GGUF v3 file")
    align = 32
    for _ in range(n_kv):
        key, t = r.string(), r.take("I")
        if key == "general.alignment" and t == 4:
            align = r.take("I")
        else:
            r.skip_value(t)
    tensors = []
    for _ in range(n_tensors):
        name, nd = r.string(), r.take("I")
        numel = 1
        for _ in range(nd):
            numel *= r.take("Q")
        typ, off = r.take("IQ")
        tensors.append((name, typ, numel, off))
    data = (r.pos + align - 1) // align * align
    return align, data, tensors


def tensor_data(path):
    """{name: bytes} of a GGUF file's tensors."""
    with open(path, "rb") as f:
        buf = f.read()
    _, data, tensors = tensor_index(buf)
    out = {}
    for name, typ, numel, off in tensors:
        if typ not in TYPE_SIZE:
            raise SystemExit(f"{path}: {name}: tensor type {typ} not handled here")
        out[name] = buf[data + off:data + off + numel * TYPE_SIZE[typ]]
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    name, out = sys.argv[1:]
    with open(os.path.join(CONVERTED, "manifest.json")) as f:
        manifest = json.load(f)
    if name not in manifest["sets"]:
        raise SystemExit(f"unknown set '{name}': {', '.join(manifest['sets'])}")
    s = manifest["sets"][name]
    golden = os.environ.get("QTTS_GOLDEN_DIR") or os.path.join(HERE, "..", "..", "..", "shared", "golden")
    os.makedirs(out, exist_ok=True)
    rebuilt = os.path.join(out, ".make_layout")
    subprocess.run([sys.executable, os.path.join(HERE, "make_layout.py"), s["layout"],
                    os.path.join(golden, s["checkpoint"]), rebuilt, "--type", s["type"]], check=True,
                   stdout=subprocess.DEVNULL)
    data = {}
    for f in os.listdir(rebuilt):
        data.update(tensor_data(os.path.join(rebuilt, f)))
    with tarfile.open(os.path.join(CONVERTED, "headers.tar.xz")) as tar:
        for entry in s["files"]:
            header = tar.extractfile(entry["header"]).read()
            _, start, tensors = tensor_index(header)
            if start != len(header):
                raise SystemExit(f"{entry['header']}: header of {len(header)} bytes, its data starts at {start}")
            body = io.BytesIO()
            for tname, typ, numel, off in tensors:
                if tname not in data:
                    raise SystemExit(f"{entry['file']}: tensor {tname} not in make_layout.py's {s['layout']} files")
                blob = data[tname]
                if len(blob) != numel * TYPE_SIZE.get(typ, -1):
                    raise SystemExit(f"{entry['file']}: tensor {tname}: {len(blob)} bytes, the header says "
                                     f"{numel} of type {typ}")
                body.write(b"\0" * (off - body.tell()))
                body.write(blob)
            whole = header + body.getvalue()
            whole += b"\0" * (entry["size"] - len(whole)) if len(whole) < entry["size"] else b""
            digest = hashlib.sha256(whole).hexdigest()
            if len(whole) != entry["size"] or digest != entry["sha256"]:
                raise SystemExit(f"{entry['file']}: rebuilt {len(whole)} bytes, sha256 {digest}; the converter "
                                 f"wrote {entry['size']} bytes, sha256 {entry['sha256']}")
            with open(os.path.join(out, entry["file"]), "wb") as f:
                f.write(whole)
    for f in os.listdir(rebuilt):
        os.remove(os.path.join(rebuilt, f))
    os.rmdir(rebuilt)


if __name__ == "__main__":
    main()
