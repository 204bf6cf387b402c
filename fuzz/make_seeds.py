#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/corpus/<target>/) and the dictionaries
derived from the golden fixtures (fuzz/dict/config.dict).

Every seed is a small valid (or nearly valid) input written here or derived
from ../shared/golden (read only; nothing is copied wholesale). Seeds stay
under 64 KB. With --runtime DIR it instead writes larger seeds (a GGUF holding
the tiny model's text files) into DIR/<target>/, for scripts/fuzz_long.sh to
add to its temporary working corpus; those are never committed.

Usage: fuzz/make_seeds.py [--golden DIR] [--runtime DIR]
"""
import argparse
import ast
import base64
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- golden fixtures -------------------------------------------------------

def load_npy(path):
    """(shape, dtype char, values) of a little-endian .npy file (v1/v2)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        raise ValueError(path + ": not a .npy file")
    major = raw[6]
    if major == 1:
        hlen = struct.unpack("<H", raw[8:10])[0]
        off = 10
    else:
        hlen = struct.unpack("<I", raw[8:12])[0]
        off = 12
    head = ast.literal_eval(raw[off:off + hlen].decode("latin1"))
    data = raw[off + hlen:]
    descr = head["descr"]
    code = {"<f4": "f", "<i4": "i"}[descr]
    n = 1
    for d in head["shape"]:
        n *= d
    return head["shape"], code, list(struct.unpack("<%d%s" % (n, code), data[:4 * n]))


# ---- formats written by hand -----------------------------------------------

def wav(samples, rate=24000, channels=1, bits=16, fmt=1):
    """A RIFF/WAVE file; samples are floats in [-1, 1], interleaved."""
    if fmt == 3:
        body = struct.pack("<%df" % len(samples), *samples)
    elif bits == 16:
        body = struct.pack("<%dh" % len(samples), *[max(-32768, min(32767, int(s * 32767))) for s in samples])
    else:  # 8-bit unsigned
        body = bytes(max(0, min(255, int(s * 127 + 128))) for s in samples)
    block = channels * bits // 8
    fmt_chunk = struct.pack("<HHIIHH", fmt, channels, rate, rate * block, block, bits)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt_chunk) + 8 + len(body)) + b"WAVE" +
            b"fmt " + struct.pack("<I", len(fmt_chunk)) + fmt_chunk + b"data" + struct.pack("<I", len(body)) + body)


def rvq_pack(codes, n_q):
    """.rvq bytes of frame-major codes[t][q] (codebook-major 11-bit stream)."""
    T = len(codes)
    bits = bytearray((n_q * T * 11 + 7) // 8)
    for q in range(n_q):
        for t in range(T):
            c = codes[t][q]
            bit = (q * T + t) * 11
            for b in range(11):
                if c >> b & 1:
                    bits[(bit + b) // 8] |= 1 << ((bit + b) % 8)
    return bytes(bits)


def byte_to_unicode():
    """GPT-2's bytes_to_unicode table, written out from its definition."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def gguf(kvs, tensors):
    """GGUF v3: kvs [(key, type, value)], tensors [(name, dims innermost first, ggml type, bytes)]."""
    def s(x):
        x = x.encode() if isinstance(x, str) else x
        return struct.pack("<Q", len(x)) + x

    def val(t, v):
        if t == 4:
            return struct.pack("<I", v)
        if t == 6:
            return struct.pack("<f", v)
        if t == 7:
            return struct.pack("<B", v)
        if t == 8:
            return s(v)
        if t == 10:
            return struct.pack("<Q", v)
        if t == 9:  # array: (element type, values)
            et, vs = v
            return struct.pack("<IQ", et, len(vs)) + b"".join(val(et, x) for x in vs)
        raise ValueError(t)

    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + val(t, v)
    off = 0
    datas = b""
    for name, dims, gt, data in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gt, off)
        pad = (-len(data)) % 32
        datas += data + b"\0" * pad
        off += len(data) + pad
    out += b"\0" * ((-len(out)) % 32)
    return out + datas


def safetensors(tensors, meta=None):
    """tensors [(name, dtype, shape, bytes)]."""
    head, data = {}, b""
    if meta:
        head["__metadata__"] = meta
    for name, dt, shape, raw in tensors:
        head[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def form(parts, boundary="XyZ"):
    """multipart/form-data body; parts [(name, filename or None, content type or None, bytes)]."""
    out = b""
    for name, filename, ctype, data in parts:
        out += b"--" + boundary.encode() + b"\r\n"
        disp = 'Content-Disposition: form-data; name="%s"' % name
        if filename:
            disp += '; filename="%s"' % filename
        out += disp.encode() + b"\r\n"
        if ctype:
            out += b"Content-Type: " + ctype.encode() + b"\r\n"
        out += b"\r\n" + data + b"\r\n"
    return out + b"--" + boundary.encode() + b"--\r\n"


def js(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# ---- the corpora -----------------------------------------------------------

def seeds(golden):
    fx = os.path.join(golden, "fixtures")
    _, _, spk = load_npy(os.path.join(fx, "spk_embedding.npy"))  # 32 floats (the tiny talker's width)
    shape, _, flat = load_npy(os.path.join(fx, "enc_codes.npy"))  # (19, 16) frame-major
    codes = [flat[t * shape[1]:(t + 1) * shape[1]] for t in range(shape[0])]
    _, _, wave = load_npy(os.path.join(fx, "input_wave_1p5s.npy"))  # 36000 samples at 24 kHz
    spk_bytes = struct.pack("<%df" % len(spk), *spk)
    rvq16 = rvq_pack(codes, 16)
    short_wav = wav(wave[:2400])  # 0.1 s, 4.8 KB
    tiny_wav = wav(wave[:200:4], rate=8000, bits=8)
    c = {}

    c["fuzz_spk_rvq"] = {
        "spk32": b"\x01" + spk_bytes,
        "rvq16": b"\x00" + rvq16,
        "rvq8": b"\x04" + rvq_pack([row[:8] for row in codes], 8),
        "rvq16_cb1024": b"\x20" + rvq_pack([[x & 1023 for x in row] for row in codes], 16),
        "spk_any": b"\x00" + struct.pack("<3f", 0.5, -1.0, 3.25),
    }

    c["fuzz_b64"] = {
        "plain": b"SGVsbG8gd29ybGQ=",
        "data_url": b"data:audio/wav;base64," + base64.b64encode(tiny_wav),
        "mime": base64.encodebytes(spk_bytes),
        "urlsafe_nopad": base64.urlsafe_b64encode(b"\xfb\xff\xfe\x01").rstrip(b"="),
        "bad_pad": b"QQ=QQ",
        "rt_bytes": b"\x05" + spk_bytes[:40],
    }

    audio_url = "data:audio/wav;base64," + base64.b64encode(tiny_wav).decode()
    c["fuzz_speech_request"] = {
        "base_voice": b"\x00" + js({"model": "tts-1", "input": "Hello there.", "voice": "alice",
                                    "response_format": "wav"}),
        "base_ref_audio": b"\x00" + js({"input": "Hi.", "ref_audio": audio_url, "ref_text": "Hi.", "language": "en",
                                        "x_vector_only": False}),
        "base_voice_object": b"\x00" + js({"input": "Hi", "voice": {"id": "broken"}, "stream": True}),
        "custom_all": b"\x01" + js({"input": "Hello", "voice": "Vivian", "language": "english",
                                    "instructions": "Calm.", "speed": 1.25, "stream_format": "sse", "seed": 42,
                                    "temperature": 0.7, "top_k": 50, "top_p": 0.9, "repetition_penalty": 1.05,
                                    "max_new_tokens": 200, "guard_frames_per_token": 12, "repetition_guard": True,
                                    "greedy": False}),
        "custom_openai": b"\x01" + js({"input": "x", "voice": {"id": "alloy"}, "stream": True}),
        "design": b"\x02" + js({"input": "Hello", "instructions": "A deep, slow voice.", "response_format": "flac",
                                "language": "auto"}),
        "limit16": b"\x04" + js({"input": "longer than sixteen characters", "voice": "alice",
                                 "stream_format": "audio"}),
    }

    c["fuzz_voice_request"] = {
        "json_parts": b"\x01" + js({"name": "alice", "ref_text": "Hello.",
                                    "spk_b64": base64.b64encode(spk_bytes).decode(),
                                    "rvq_b64": base64.b64encode(rvq16).decode()}),
        "json_wav": b"\x01" + js({"name": "bob", "wav_b64": base64.b64encode(tiny_wav).decode()}),
        "json_audio_url": b"\x01" + js({"name": "carol.2", "audio_b64": audio_url, "ref_text": ""}),
        "form": b"\x00" + form([("name", None, None, b"alice"),
                                ("audio_sample", "a.wav", "audio/wav", tiny_wav),
                                ("ref_text", None, None, "Hello, wörld.".encode()),
                                ("type", None, None, b"audio_sample"),
                                ("consent", None, None, b"yes")]),
        "form_bad_type": b"\x00" + form([("type", None, None, b"prompt"), ("name", None, None, b"x"),
                                         ("audio_sample", "b.flac", None, b"fLaC")]),
    }

    def entry(path, size, lfs=False):
        e = {"type": "file", "oid": "0123456789abcdef0123456789abcdef01234567", "size": size, "path": path}
        if lfs:
            e["lfs"] = {"oid": "A" * 16 + "b" * 48, "size": size, "pointerSize": 134}
        return e
    listing = [entry("config.json", 2855), entry("model.safetensors", 13991624, True),
               {"type": "directory", "oid": "f" * 40, "size": 0, "path": "speech_tokenizer"},
               entry("speech_tokenizer/config.json", 900), entry(".gitattributes", 1519), entry("assets/a.png", 5)]
    c["fuzz_hub_list"] = {
        "listing": b"\x00" + js(listing),
        "unsafe": b"\x00" + js([entry("../evil", 1)]),
        "headers": b"\x01" + (b"HTTP/1.1 302 Found\r\nLocation: https://cdn/x\r\n\r\nHTTP/1.1 206 Partial Content\r\n"
                              b"Content-Range: bytes 100-199/200\r\n"
                              b"Link: <https://huggingface.co/api/models/Qwen/x/tree/main?recursive=true&cursor=ab>;"
                              b" rel=\"next\"\r\n\r\n"),
    }

    b2u = byte_to_unicode()
    words = ["Ġt", "he", "Ġthe", "in", "Ġa", "er", "ll", "Ġw", "or", "ld", "Ġwor", "Ġworld", "He", "Hell", "Hello"]
    vocab = {b2u[b]: b for b in range(256)}
    for i, w in enumerate(words):
        vocab[w] = 256 + i
    merges = "#version: 0.2\nĠ t\nh e\nĠt he\ni n\nĠ a\ne r\nl l\nĠ w\no r\nl d\nĠw or\nĠwor ld\nH e\nHe ll\nHell o\n"
    added = {"added_tokens_decoder": {
        "300": {"content": "<|im_start|>", "lstrip": False, "normalized": False, "rstrip": False,
                "single_word": False, "special": True},
        "301": {"content": "<|im_end|>", "special": True},
        "302": {"content": "<tts_pad>", "lstrip": True, "rstrip": True, "normalized": True},
        "303": {"content": "word", "single_word": True, "special": False}}}
    c["fuzz_tok_files"] = {
        "merges": b"\x00" + merges.encode() + b"\0\0",
        "merges_added": b"\x02" + merges.encode() + b"\0" + js(added) + b"\0",
        "own_vocab": b"\x03" + merges.encode() + b"\0" + js(added) + b"\0" + js(vocab),
        "bad_line": b"\x00" + b"Hello\n" + b"\0\0",
    }

    c["fuzz_split"] = {
        "english": b"\x00" + ("Mr. Smith went to Washington, D.C. on Jan. 3. He paid $3.14, e.g. for tea! "
                              "\"Really?\" she asked.\n\nA new paragraph; with clauses: and dashes \u2014 here\u2026 "
                              "1. first\n2. second\n").encode(),
        "short_max": b"\x03" + "Hello, world; this is: a test \u2013 of cuts at seven.".encode(),
        "by_line": b"\x20" + "line one\nline two\r\nline three\u2028four\u2029five\x85six".encode(),
        "cjk": b"\x0c" + "你好。世界！これは日本語です。안녕하세요？ e\u0301\u200d\U0001F44D\U0001F3FB".encode(),
        "long_word": b"\x01" + b"x" * 40 + b" \xff\xfe bad bytes",
    }

    # the existing targets
    c["fuzz_audio_read"] = {
        "wav16": short_wav,
        "wav8": tiny_wav,
        "wav_float_stereo": wav([x for v in wave[:800] for x in (v, -v)], rate=16000, channels=2, bits=32, fmt=3),
        "spk": spk_bytes,
    }
    cfg = {}
    for model in sorted(os.listdir(golden)):
        d = os.path.join(golden, model)
        if not os.path.isdir(d) or not model.startswith("Qwen3-TTS"):
            continue
        for rel in ("config.json", "generation_config.json", "speech_tokenizer/config.json"):
            p = os.path.join(d, rel)
            if os.path.exists(p):
                with open(p) as f:
                    cfg["%s_%s" % ("-".join(model.split("-")[3:5]), rel.replace("/", "_").replace(".json", ""))] = \
                        js(json.load(f))
    c["fuzz_config"] = cfg

    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    bf16 = struct.pack("<4H", 0x3F80, 0x4000, 0xBF80, 0)
    q8 = struct.pack("<H", 0x3C00) + bytes(range(32))  # one Q8_0 block: f16 scale 1.0 + 32 int8
    c["fuzz_gguf"] = {
        "small": gguf([("general.architecture", 8, "qwen3_tts"), ("general.alignment", 4, 32),
                       ("qtts.weight_type", 8, "q8_0"), ("x.f32", 6, 0.5), ("x.bool", 7, 1),
                       ("x.u64", 10, 7), ("x.arr", 9, (8, ["a", "bc"])),
                       ("qtts.config_json", 8, '{"talker_config":{"hidden_size":32}}')],
                      [("a.f32", [3, 2], 0, f32), ("b.bf16", [4], 30, bf16), ("c.q8_0", [32, 1], 8, q8)]),
    }
    # voice files (voices/voice_import.h): the first byte's low bit says whether the last third is .rvq codes
    xv = struct.pack("<11f", *[0.1 * i for i in range(11)])
    codes = rvq_pack([[(q * 97 + 5) % 2048 for q in range(16)]], 16)
    c["fuzz_voice_import"] = {
        "pack": b"\x00" + gguf([("general.architecture", 8, "qwen3tts.voicepack"),
                                ("voicepack.names", 9, (8, ["alice", "bob"])),
                                ("voicepack.ref_texts", 9, (8, ["Hello there.", ""]))],
                               [("voicepack.spk.alice.embd", [4], 0, struct.pack("<4f", 1, 2, 3, 4)),
                                ("voicepack.code.alice.codes", [16, 2], 26, struct.pack("<32i", *range(32))),
                                ("voicepack.spk.bob.embd", [4], 0, struct.pack("<4f", -1, 0, 1, 2))]),
        # gm-C's --save-voice: x-vector, transcript, 2 frames of codes, then its META section
        "qvoice": b"\x00QVCE" + struct.pack("<II", 3, 4) + struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<I", 4)
                  + b"text" + struct.pack("<I", 2) + struct.pack("<32i", *range(32)) + b"META" + bytes(100),
        "qvoice_no_codes": b"\x00QVCE" + struct.pack("<II", 2, 4) + struct.pack("<4f", 1, 2, 3, 4) + bytes(8),
        "spk": b"\x00" + xv,
        "spk_rvq": b"\x01" + xv + codes,
    }
    c["fuzz_safetensors"] = {
        "small": safetensors([("a.weight", "F32", [2, 3], f32), ("b.bias", "BF16", [4], bf16),
                              ("c.f16", "F16", [1], struct.pack("<H", 0x3C00))], {"format": "pt"}),
        # numel * 4 bytes wraps to 0 in 64 bits: refused (qtts_store_add), never a tensor without data
        "wrapped_size": safetensors([("talker.w.weight", "F32", [4294967296, 1073741824], b"")]),
    }
    with open(os.path.join(fx, "text_tokenizer_cases.json")) as f:
        cases = json.load(f)["cases"]
    tok = {}
    for i, case in enumerate(cases[:6]):
        tok["encode_%d" % i] = b"\x00" + case["text"].encode()
    tok["template"] = b"\x05" + "Hello, <tts_pad> world".encode()
    tok["vocab"] = b"\x02" + js({"a": 0, "b": 1, "\\u00e9": 2})
    tok["ids"] = b"\x03" + struct.pack("<5i", 9707, 1879, 0, 151644, -1)
    c["fuzz_tokenizer"] = tok
    c["fuzz_multipart"] = {
        "form": b"multipart/form-data; boundary=XyZ\n" + form([("name", None, None, b"alice"),
                                                               ("audio_sample", "a.wav", "audio/wav", tiny_wav)]),
        "quoted": b'multipart/form-data; charset=utf-8; boundary="a b;c"\n' +
                  form([("f", "x\\\".txt", "text/plain", b"hi")], boundary="a b;c"),
    }
    return c


def runtime_seeds(golden):
    """Larger seeds made at run time (not committed)."""
    base = os.path.join(golden, "Qwen3-TTS-12Hz-0.6B-Base-tiny")
    kvs = [("general.architecture", 8, "qwen3_tts")]
    for key, rel in (("qtts.config_json", "config.json"), ("qtts.generation_config_json", "generation_config.json"),
                     ("qtts.tokenizer_config_json", "tokenizer_config.json"),
                     ("qtts.codec_config_json", "speech_tokenizer/config.json")):
        with open(os.path.join(base, rel)) as f:
            kvs.append((key, 8, f.read()))
    return {
        "fuzz_gguf": {"texts": gguf(kvs, [("a.f32", [2], 0, struct.pack("<2f", 1, 2))])},
    }


def write(corpora, root):
    """Writes each seed; other files there (regression inputs from crashes) stay."""
    for target, files in corpora.items():
        d = os.path.join(root, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


def config_dict(golden, path):
    """Every key of the golden config files, as libFuzzer dictionary entries."""
    keys = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                keys.add(k)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for model in sorted(os.listdir(golden)):
        for rel in ("config.json", "generation_config.json", "speech_tokenizer/config.json"):
            p = os.path.join(golden, model, rel)
            if os.path.exists(p):
                with open(p) as f:
                    walk(json.load(f))
    with open(path, "w") as f:
        f.write("# config.json / generation_config.json / speech_tokenizer/config.json keys (fuzz/make_seeds.py)\n")
        for k in sorted(keys):
            if all(0x20 <= ord(ch) < 0x7f and ch not in '"\\' for ch in k):
                f.write('"\\"%s\\""\n' % k)
        for v in ("true", "false", "null", "[]", "{}", "-1", "1e400", "0.5"):
            f.write('"%s"\n' % v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=os.path.join(HERE, "..", "..", "shared", "golden"))
    ap.add_argument("--runtime", help="write the larger run-time seeds into this folder instead")
    a = ap.parse_args()
    if not os.path.isdir(a.golden):
        print("make_seeds: no golden fixtures at %s" % a.golden, file=sys.stderr)
        return 1
    if a.runtime:
        write(runtime_seeds(a.golden), a.runtime)
        return 0
    corpora = seeds(a.golden)
    for target, files in corpora.items():
        for name, data in files.items():
            if len(data) >= 64 * 1024:
                raise SystemExit("%s/%s is %d bytes (seeds stay under 64 KB)" % (target, name, len(data)))
    write(corpora, os.path.join(HERE, "corpus"))
    os.makedirs(os.path.join(HERE, "dict"), exist_ok=True)
    config_dict(a.golden, os.path.join(HERE, "dict", "fuzz_config.dict"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
