#!/usr/bin/env python3
"""Writes a copy of an official Qwen3-TTS checkpoint folder in another
project's layout, for tests/test_layouts.c.

    make_layout.py LAYOUT CHECKPOINT_DIR OUT [--type f32|f16|bf16|q8_0|q6_k|q5_k|q4_0] [--arch NAME]

--arch overrides general.architecture (a mislabeled file, for the tests).

LAYOUT:
  qwentts       qwentts.cpp (ServeurpersoCom/qwentts.cpp convert.py @ a8a7716,
                then tools/quantize.cpp for other types): OUT/qwen-talker-*.gguf
                and OUT/qwen-tokenizer-12hz-*.gguf
  crispasr      CrispASR (CrispStrobe/CrispASR models/convert-qwen3-tts-to-gguf.py
                and convert-qwen3-tts-tokenizer-to-gguf.py @ 72d3c38):
                OUT/qwen3-tts-12hz-*.gguf and OUT/qwen3-tts-tokenizer-12hz.gguf
  llamacpp      llama.cpp (ggml-org/llama.cpp convert_hf_to_gguf.py, Qwen3TTSTalkerModel and, with
                --mmproj, Qwen3TTSSpeakerEncoderModel, PR #26254 as merged; the speaker
                encoder's names as clip.cpp loads them): OUT/Qwen3-TTS-12Hz-*.gguf and
                OUT/mmproj-Qwen3-TTS-12Hz-*.gguf
  llamacpp-reference  OUT/: the official folder with the decoder attention llama.cpp assumes
  blocks        OUT/blocks.gguf: random matrices in each block type this script writes, and their f32 sources
  transformers  transformers' convert_qwen3_tts_to_hf.py and
                convert_qwen3_tts_tokenizer_multi_codebook_to_hf.py (PR #44517):
                OUT/ (model.safetensors, config.json, ...) and OUT/speech_tokenizer/

This is NOT those converters. It reproduces their tensor names, tensor
transforms (pre-divided codebooks, dropped tensors, F16/F32 choices) and
metadata keys, read from their code, with numpy alone; the GGUF writer and the
block quantizers are written here from the GGUF/GGML formats. The qwentts.cpp
and CrispASR converters themselves were run on the golden checkpoints
(converted/README.md): their f32/f16 tensors are the same as this script's,
bit for bit, and assemble_converted.py rebuilds their files from this script's
tensor data. llama.cpp's and transformers' converters could not be run here
(llama.cpp's gguf-py of the Qwen3-TTS commit cannot be fetched; transformers
with Qwen3-TTS cannot be installed).
"""
import json
import os
import re
import struct
import sys

import numpy as np

# ---- safetensors ----

DT = {"F32": np.float32, "F16": np.float16, "BF16": None}


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[b:e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, DT[info["dtype"]]).astype(np.float32)
        out[name] = a.reshape(info["shape"])
    return out


def save_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---- GGML block types (written from the GGML block layouts) ----

F32, F16, Q4_0, Q8_0, Q5_K, Q6_K, BF16 = 0, 1, 2, 8, 13, 14, 30


def f16(x):
    return np.asarray(x, np.float32).astype(np.float16)


def q8_0(a):
    x = a.reshape(-1, 32)
    amax = np.abs(x).max(1)
    d = f16(amax / 127)
    dd = d.astype(np.float32)
    q = np.where(dd[:, None] > 0, np.round(x / np.where(dd > 0, dd, 1)[:, None]), 0).clip(-127, 127).astype(np.int8)
    out = np.zeros((x.shape[0], 34), np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def q4_0(a):
    x = a.reshape(-1, 32)
    i = np.abs(x).argmax(1)
    mx = x[np.arange(len(x)), i]
    d = f16(mx / -8)
    dd = d.astype(np.float32)
    inv = np.where(dd != 0, 1 / np.where(dd != 0, dd, 1), 0)
    q = np.clip(np.floor(x * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    out = np.zeros((len(x), 18), np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def q6_k(a):
    x = a.reshape(-1, 256)
    g = x.reshape(-1, 16, 16)
    gmax = np.abs(g).max(2)  # per 16
    gscale = gmax / 31.0
    d = f16(gscale.max(1) / 127.0)
    dd = d.astype(np.float32)
    sc = np.where(dd[:, None] > 0, np.round(gscale / np.where(dd > 0, dd, 1)[:, None]), 0).clip(-128, 127).astype(np.int8)
    step = dd[:, None] * sc.astype(np.float32)
    q = np.where(step[:, :, None] != 0, np.round(g / np.where(step != 0, step, 1)[:, :, None]), 0)
    q = (q.clip(-32, 31) + 32).astype(np.uint8).reshape(-1, 256)
    out = np.zeros((len(x), 210), np.uint8)
    for h in range(2):  # two 128-value halves
        qq = q[:, 128 * h:128 * h + 128]
        ql = out[:, 64 * h:64 * h + 64]
        qh = out[:, 128 + 32 * h:128 + 32 * h + 32]
        ql[:, :32] = (qq[:, 0:32] & 15) | ((qq[:, 64:96] & 15) << 4)
        ql[:, 32:] = (qq[:, 32:64] & 15) | ((qq[:, 96:128] & 15) << 4)
        qh[:] = (qq[:, 0:32] >> 4) | ((qq[:, 32:64] >> 4) << 2) | ((qq[:, 64:96] >> 4) << 4) | ((qq[:, 96:128] >> 4) << 6)
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = d.view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def q5_k(a):
    x = a.reshape(-1, 256)
    g = x.reshape(-1, 8, 32)
    lo = np.minimum(g.min(2), 0)
    hi = g.max(2)
    scale = (hi - lo) / 31.0
    mn = -lo
    d = f16(scale.max(1) / 63.0)
    dmin = f16(mn.max(1) / 63.0)
    dd, dm = d.astype(np.float32), dmin.astype(np.float32)
    sc = np.where(dd[:, None] > 0, np.round(scale / np.where(dd > 0, dd, 1)[:, None]), 0).clip(0, 63).astype(np.uint8)
    m = np.where(dm[:, None] > 0, np.round(mn / np.where(dm > 0, dm, 1)[:, None]), 0).clip(0, 63).astype(np.uint8)
    step = dd[:, None] * sc
    off = dm[:, None] * m
    q = np.where(step[:, :, None] > 0, np.round((g + off[:, :, None]) / np.where(step > 0, step, 1)[:, :, None]), 0)
    q = q.clip(0, 31).astype(np.uint8).reshape(-1, 256)
    out = np.zeros((len(x), 176), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = dmin.view(np.uint8).reshape(-1, 2)
    s = out[:, 4:16]
    for j in range(8):  # the 12-byte 6-bit scale/min packing of Q4_K/Q5_K
        if j < 4:
            s[:, j] = sc[:, j] & 63
            s[:, j + 4] = m[:, j] & 63
        else:
            s[:, j + 4] = (sc[:, j] & 15) | ((m[:, j] & 15) << 4)
            s[:, j - 4] |= (sc[:, j] >> 4) << 6
            s[:, j] |= (m[:, j] >> 4) << 6
    qh = out[:, 16:48]
    ql = out[:, 48:176]
    for c in range(4):  # 64 values per chunk: low nibble = first 32, high = next 32
        a0 = q[:, 64 * c:64 * c + 32]
        a1 = q[:, 64 * c + 32:64 * c + 64]
        ql[:, 32 * c:32 * c + 32] = (a0 & 15) | ((a1 & 15) << 4)
        qh[:] |= ((a0 >> 4) << (2 * c)) | ((a1 >> 4) << (2 * c + 1))
    return out.tobytes()


QUANT = {"q8_0": (Q8_0, 32, q8_0), "q4_0": (Q4_0, 32, q4_0), "q6_k": (Q6_K, 256, q6_k), "q5_k": (Q5_K, 256, q5_k)}


def encode(a, typ):
    a = np.ascontiguousarray(a, np.float32)
    if typ == F32:
        return a.tobytes()
    if typ == F16:
        return a.astype(np.float16).tobytes()
    if typ == BF16:
        u = a.view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    for _, (t, _, fn) in QUANT.items():
        if t == typ:
            return fn(a)
    raise ValueError(typ)


# ---- GGUF writer ----

U32, I32, F32V, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(v):
    if isinstance(v, bool):
        return struct.pack("<I", BOOL) + struct.pack("<B", v)
    if isinstance(v, int):
        return struct.pack("<I", U32) + struct.pack("<I", v)
    if isinstance(v, float):
        return struct.pack("<I", F32V) + struct.pack("<f", v)
    if isinstance(v, str):
        return struct.pack("<I", STR) + gguf_str(v)
    if isinstance(v, list):
        if all(isinstance(x, str) for x in v) and v:
            return struct.pack("<IIQ", ARR, STR, len(v)) + b"".join(gguf_str(x) for x in v)
        if all(isinstance(x, int) for x in v):
            t = I32 if any(x < 0 for x in v) else U32
            return struct.pack("<IIQ", ARR, t, len(v)) + struct.pack("<%d%s" % (len(v), "i" if t == I32 else "I"), *v)
    raise ValueError(repr(v)[:80])


ARCH_OVERRIDE = None  # --arch: a mislabeled file for the tests


def write_gguf(path, kv, tensors):
    """kv: list of (key, value); tensors: list of (name, array, ggml type)."""
    if ARCH_OVERRIDE:
        kv = [(k, ARCH_OVERRIDE if k == "general.architecture" else v) for k, v in kv]
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv) + 1)]
    out.append(gguf_str("general.alignment") + gguf_value(32))
    for k, v in kv:
        if k == "tokenizer.ggml.token_type":  # gguf-py writes token types as INT32 whatever their values
            out.append(gguf_str(k) + struct.pack("<IIQ", ARR, I32, len(v)) + struct.pack("<%di" % len(v), *v))
        else:
            out.append(gguf_str(k) + gguf_value(v))
    blobs, off = [], 0
    for name, a, typ in tensors:
        raw = encode(a, typ)
        dims = list(a.shape)[::-1]
        out.append(gguf_str(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims) +
                   struct.pack("<IQ", typ, off))
        blobs.append(raw)
        off += len(raw) + (-len(raw)) % 32
    head = b"".join(out)
    head += b"\0" * ((-len(head)) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b + b"\0" * ((-len(b)) % 32))


# ---- shared ----

LM = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
      "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
      "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
      "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
      "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
      "mlp.down_proj.weight": "ffn_down.weight"}


def vocab_tokens(ckpt):
    vocab = json.load(open(os.path.join(ckpt, "vocab.json"), encoding="utf-8"))
    merges = [l for l in open(os.path.join(ckpt, "merges.txt"), encoding="utf-8").read().splitlines()
              if l and not l.startswith("#")]
    return vocab, merges


def divided(s, usage):
    return s / np.maximum(usage, 1e-5)[:, None]


def matrix_type(name, a, typ_name):
    """The quantizer's choice: 2-D+ weights in the wanted type when rows fit, else F16/F32."""
    if typ_name == "f32" or a.ndim < 2:
        return F32
    if typ_name == "f16":
        return F16
    if typ_name == "bf16":
        return BF16
    t, be, _ = QUANT[typ_name]
    return t if a.shape[-1] % be == 0 and a.ndim == 2 else F16


# ---- qwentts.cpp ----

def qwentts(ckpt, out, typ):
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    gen = json.load(open(os.path.join(ckpt, "generation_config.json")))
    tk, cp = cfg["talker_config"], cfg["talker_config"]["code_predictor_config"]
    st = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    tensors = []

    def add(name, a):
        # tools/quantize.cpp: 1-D, RVQ and spk_enc.fc stay F32; the rest in the wanted type
        keep = a.ndim < 2 or "spk_enc.fc.weight" in name or typ == "f32"
        tensors.append((name, a, F32 if keep else matrix_type(name, a, typ)))

    top = {"talker.model.codec_embedding.weight": "talker.codec_embd.weight",
           "talker.model.text_embedding.weight": "talker.text_embd.weight",
           "talker.model.norm.weight": "talker.output_norm.weight", "talker.codec_head.weight": "talker.codec_head.weight",
           "talker.code_predictor.model.norm.weight": "code_pred.output_norm.weight",
           "talker.code_predictor.small_to_mtp_projection.weight": "code_pred.mtp_proj.weight",
           "talker.code_predictor.small_to_mtp_projection.bias": "code_pred.mtp_proj.bias",
           "speaker_encoder.blocks.0.conv.weight": "spk_enc.conv0.weight",
           "speaker_encoder.blocks.0.conv.bias": "spk_enc.conv0.bias",
           "speaker_encoder.asp.conv.weight": "spk_enc.asp.conv.weight", "speaker_encoder.asp.conv.bias": "spk_enc.asp.conv.bias",
           "speaker_encoder.asp.tdnn.conv.weight": "spk_enc.asp.tdnn.weight",
           "speaker_encoder.asp.tdnn.conv.bias": "spk_enc.asp.tdnn.bias",
           "speaker_encoder.mfa.conv.weight": "spk_enc.mfa.weight", "speaker_encoder.mfa.conv.bias": "spk_enc.mfa.bias",
           "speaker_encoder.fc.weight": "spk_enc.fc.weight", "speaker_encoder.fc.bias": "spk_enc.fc.bias"}
    for k in sorted(st):
        a = st[k]
        m = re.match(r"talker\.(model|code_predictor\.model)\.layers\.(\d+)\.(.+)$", k)
        if m:
            add("%s.%s.%s" % ("talker.blk" if m.group(1) == "model" else "code_pred.blk", m.group(2), LM[m.group(3)]), a)
        elif k in top:
            add(top[k], a)
        elif k.startswith("talker.text_projection.linear_fc"):
            add(k.replace("talker.text_projection.linear_fc", "talker.text_proj.fc"), a)
        elif k.startswith("talker.code_predictor.model.codec_embedding."):
            add("code_pred.codec_embd.%s.weight" % k.split(".")[4], a)
        elif k.startswith("talker.code_predictor.lm_head."):
            add("code_pred.lm_head.%s.weight" % k.split(".")[3], a)
        elif k.startswith("speaker_encoder.blocks."):
            p = k.split(".")
            if p[3] == "res2net_block":
                add("spk_enc.blk.%s.res2net.%s.%s" % (p[2], p[5], p[-1]), a)
            elif p[3] == "se_block":
                add("spk_enc.blk.%s.se.%s.%s" % (p[2], p[4], p[-1]), a)
            else:
                add("spk_enc.blk.%s.%s.%s" % (p[2], p[3], p[-1]), a)
        else:
            raise SystemExit("unhandled " + k)
    vocab, merges = vocab_tokens(ckpt)
    tcfg = json.load(open(os.path.join(ckpt, "tokenizer_config.json")))
    added = tcfg.get("added_tokens_decoder", {})
    n = max(max(vocab.values()), max(int(i) for i in added)) + 1
    toks, types = ["<|unused-%d|>" % i for i in range(n)], [5] * n
    for t, i in vocab.items():
        toks[i], types[i] = t, 1
    for i, info in added.items():
        toks[int(i)], types[int(i)] = info["content"], 4
    langs = tk.get("codec_language_id") or {}
    kv = [("general.architecture", "qwen3-tts"), ("qwen3-tts.model_size", cfg["tts_model_size"]),
          ("qwen3-tts.model_type", cfg["tts_model_type"]),
          ("qwen3-tts.talker.rope.freq_base", float(tk["rope_theta"])),
          ("qwen3-tts.talker.attention.layer_norm_rms_epsilon", float(tk["rms_norm_eps"])),
          ("qwen3-tts.code_pred.rope.freq_base", float(cp["rope_theta"])),
          ("qwen3-tts.code_pred.attention.layer_norm_rms_epsilon", float(cp["rms_norm_eps"])),
          ("qwen3-tts.codec.pad_id", tk["codec_pad_id"]), ("qwen3-tts.codec.bos_id", tk["codec_bos_id"]),
          ("qwen3-tts.codec.eos_id", tk["codec_eos_token_id"]), ("qwen3-tts.codec.think_id", tk["codec_think_id"]),
          ("qwen3-tts.codec.nothink_id", tk["codec_nothink_id"]),
          ("qwen3-tts.codec.think_bos_id", tk["codec_think_bos_id"]),
          ("qwen3-tts.codec.think_eos_id", tk["codec_think_eos_id"]),
          ("qwen3-tts.codec.language_names", list(langs)), ("qwen3-tts.codec.language_ids", [int(v) for v in langs.values()]),
          ("qwen3-tts.text.im_start_id", cfg["im_start_token_id"]), ("qwen3-tts.text.im_end_id", cfg["im_end_token_id"]),
          ("qwen3-tts.text.tts_pad_id", cfg["tts_pad_token_id"]), ("qwen3-tts.text.tts_bos_id", cfg["tts_bos_token_id"]),
          ("qwen3-tts.text.tts_eos_id", cfg["tts_eos_token_id"])]
    spk = tk.get("spk_id") or {}
    if spk:
        dia = tk.get("spk_is_dialect") or {}
        kv += [("qwen3-tts.codec.speaker_names", list(spk)), ("qwen3-tts.codec.speaker_ids", [int(v) for v in spk.values()]),
               ("qwen3-tts.codec.speaker_dialects", [dia.get(s) if isinstance(dia.get(s), str) else "" for s in spk])]
    if cfg.get("speaker_encoder_config"):
        kv += [("qwen3-tts.spk_enc.sample_rate", cfg["speaker_encoder_config"].get("sample_rate", 24000))]
    kv += [("generation.do_sample", bool(gen["do_sample"])), ("generation.top_k", int(gen["top_k"])),
           ("generation.top_p", float(gen["top_p"])), ("generation.temperature", float(gen["temperature"])),
           ("generation.repetition_penalty", float(gen["repetition_penalty"])),
           ("generation.subtalker_do_sample", bool(gen["subtalker_dosample"])),
           ("generation.subtalker_top_k", int(gen["subtalker_top_k"])),
           ("generation.subtalker_top_p", float(gen["subtalker_top_p"])),
           ("generation.subtalker_temperature", float(gen["subtalker_temperature"])),
           ("generation.max_new_tokens", int(gen["max_new_tokens"]))]
    kv += [("tokenizer.ggml.model", "gpt2"), ("tokenizer.ggml.tokens", toks), ("tokenizer.ggml.token_type", types),
           ("tokenizer.ggml.merges", merges)]
    kind = cfg["tts_model_type"].replace("_", "")
    write_gguf(os.path.join(out, "qwen-talker-%s-%s.gguf" % (cfg["tts_model_size"], kind)), kv, tensors)

    # the tokenizer file: F32 in every variant for the RVQ parts; encoder acoustic codebooks past the valid ones dropped
    sc = json.load(open(os.path.join(ckpt, "speech_tokenizer", "config.json")))
    cs = load_safetensors(os.path.join(ckpt, "speech_tokenizer", "model.safetensors"))
    dec, enc = sc["decoder_config"], sc["encoder_config"]
    kept = sc["encoder_valid_num_quantizers"] - enc["num_semantic_quantizers"]
    ct = []
    books = {}
    for k in sorted(cs):
        a = cs[k]
        p = k.split(".")
        if k.startswith("encoder.encoder.layers."):
            n = "tok_enc.conv.%s.%s" % (p[3], p[-1]) if p[4] == "conv" else "tok_enc.res.%s.blk.%s.%s" % (p[3], p[5], p[-1])
        elif k.startswith("encoder.encoder_transformer.layers."):
            r = ".".join(p[4:])
            m = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
                 "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                 "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}
            if r == "self_attn_layer_scale.scale":
                n = "tok_enc.blk.%s.attn_scale" % p[3]
            elif r == "mlp_layer_scale.scale":
                n = "tok_enc.blk.%s.ffn_scale" % p[3]
            else:
                n = "tok_enc.blk.%s.%s.%s" % (p[3], m[".".join(p[4:-1])], p[-1])
        elif k.startswith("encoder.downsample."):
            n = "tok_enc.downsample.%s" % p[-1]
        elif k.startswith("encoder.quantizer."):
            side = "semantic" if p[2].startswith("semantic") else "acoustic"
            if k.endswith("_proj.weight"):
                n = "tok_enc.vq_%s.%s.weight" % (side, p[3])
            else:
                if side == "acoustic" and int(p[4]) >= kept or p[-1] == "initialized":
                    continue
                books.setdefault("tok_enc.vq_%s.%s.codebook" % (side, p[4]), {})[p[-1]] = a
                continue
        elif k.startswith("decoder.pre_conv."):
            n = "tok_dec.pre_conv.%s" % p[-1]
        elif k.startswith("decoder.pre_transformer.layers."):
            r = ".".join(p[4:])
            if r == "self_attn_layer_scale.scale":
                n = "tok_dec.pre_tfm.blk.%s.attn_scale" % p[3]
            elif r == "mlp_layer_scale.scale":
                n = "tok_dec.pre_tfm.blk.%s.ffn_scale" % p[3]
            else:
                n = "tok_dec.pre_tfm.blk.%s.%s" % (p[3], LM[r])
        elif k.startswith("decoder.pre_transformer."):
            n = "tok_dec.pre_tfm." + ".".join(p[2:])
        elif k.startswith("decoder.upsample."):
            n = ("tok_dec.upsample.%s.conv.%s" % (p[2], p[-1]) if p[3] == "0" else
                 "tok_dec.upsample.%s.dwconv.%s" % (p[2], p[-1]) if p[4] == "dwconv" else
                 "tok_dec.upsample.%s.gamma" % p[2] if p[4] == "gamma" else "tok_dec.upsample.%s.%s.%s" % (p[2], p[4], p[-1]))
        elif k.startswith("decoder.decoder."):
            i = int(p[2])
            if i in (0, 6):
                n = "tok_dec.dec.%d.conv.%s" % (i, p[-1])
            elif i == 5:
                n = "tok_dec.dec.5.snake.%s" % p[-1]
            elif p[4] == "0":
                n = "tok_dec.dec.%d.snake.%s" % (i, p[-1])
            elif p[4] == "1":
                n = "tok_dec.dec.%d.conv_t.%s" % (i, p[-1])
            else:
                n = "tok_dec.dec.%d.res.%d.%s.%s" % (i, int(p[4]) - 2, p[5], p[-1])
        elif k.startswith("decoder.quantizer."):
            if k.endswith("input_proj.weight"):
                continue
            if k.endswith("output_proj.weight"):
                n = "tok_dec.%s.output_proj.weight" % p[2][1:]
            else:
                books.setdefault("tok_dec.%s.%s.codebook" % (p[2][1:], p[5]), {})[p[-1]] = a
                continue
        else:
            raise SystemExit("unhandled " + k)
        ct.append((n, a, F32))
    for n in sorted(books):
        b = books[n]
        ct.append((n, divided(b.get("embedding_sum", b.get("embed_sum")), b["cluster_usage"]).astype(np.float32), F32))
    ckv = [("general.architecture", "qwen3-tts-tokenizer")]
    for k in ("input_sample_rate", "output_sample_rate", "decode_upsample_rate", "encode_downsample_rate",
              "encoder_valid_num_quantizers"):
        ckv.append(("qwen3-tts-tokenizer." + k, sc[k]))
    for k in ("latent_dim", "codebook_dim", "codebook_size", "decoder_dim", "hidden_size", "intermediate_size", "head_dim",
              "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "num_quantizers", "sliding_window",
              "upsample_rates", "upsampling_ratios"):
        ckv.append(("qwen3-tts-tokenizer.decoder." + k, dec[k]))
    ckv += [("qwen3-tts-tokenizer.decoder.rms_norm_eps", float(dec["rms_norm_eps"])),
            ("qwen3-tts-tokenizer.decoder.rope_theta", float(dec["rope_theta"]))]
    for k in ("num_filters", "kernel_size", "last_kernel_size", "residual_kernel_size", "num_residual_layers",
              "dilation_growth_rate", "compress", "upsampling_ratios", "hidden_size", "intermediate_size", "head_dim",
              "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "codebook_dim", "codebook_size",
              "num_quantizers", "num_semantic_quantizers"):
        ckv.append(("qwen3-tts-tokenizer.encoder." + k, enc[k]))
    ckv += [("qwen3-tts-tokenizer.encoder.norm_eps", float(enc["norm_eps"])),
            ("qwen3-tts-tokenizer.encoder.rope_theta", float(enc["rope_theta"]))]
    write_gguf(os.path.join(out, "qwen-tokenizer-12hz-F32.gguf"), ckv, ct)


# ---- CrispASR ----

def crispasr(ckpt, out, typ):
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    tk = cfg["talker_config"]
    st = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    rep = [("talker.code_predictor.model.codec_embedding.", "code_pred.token_embd."),
           ("talker.code_predictor.lm_head.", "code_pred.output."), ("talker.code_predictor.model.norm.", "code_pred.output_norm."),
           ("talker.code_predictor.model.layers.", "code_pred.blk."),
           ("talker.code_predictor.small_to_mtp_projection.", "code_pred.small_to_mtp."),
           ("talker.model.codec_embedding.", "talker.token_embd."), ("talker.model.text_embedding.", "talker.token_embd_text."),
           ("talker.model.norm.", "talker.output_norm."), ("talker.codec_head.", "talker.output."),
           ("talker.model.layers.", "talker.blk."), ("talker.text_projection.linear_fc1.", "talker.text_proj.fc1."),
           ("talker.text_projection.linear_fc2.", "talker.text_proj.fc2."),
           (".self_attn.q_proj.", ".attn_q."), (".self_attn.k_proj.", ".attn_k."), (".self_attn.v_proj.", ".attn_v."),
           (".self_attn.o_proj.", ".attn_output."), (".self_attn.q_norm.", ".attn_q_norm."),
           (".self_attn.k_norm.", ".attn_k_norm."), (".input_layernorm.", ".attn_norm."),
           (".post_attention_layernorm.", ".ffn_norm."), (".mlp.gate_proj.", ".ffn_gate."), (".mlp.up_proj.", ".ffn_up."),
           (".mlp.down_proj.", ".ffn_down."), ("speaker_encoder.", "speaker.")]
    tensors = []
    for k in sorted(st):
        n = k
        for a, b in rep:
            n = n.replace(a, b)
        a = st[k]
        # the converter: 1-D F32, the rest in --outtype (f16 / f32); its quantizer then makes q8_0 / q4_k
        t = F32 if a.ndim <= 1 or typ == "f32" else F16 if typ == "f16" else matrix_type(n, a, typ)
        tensors.append((n, a, t))
    vocab, merges = vocab_tokens(ckpt)
    toks = [""] * len(vocab)
    for t, i in vocab.items():
        if i < len(toks):
            toks[i] = t
    langs = tk.get("codec_language_id") or {}
    ln = sorted(langs)
    kv = [("general.architecture", "qwen3tts"),
          ("general.name", "qwen3-tts-%s-%s" % (cfg.get("tts_model_size", "?"), cfg.get("tts_model_type", "?"))),
          ("qwen3tts.talker.rope_theta", float(tk["rope_theta"])), ("qwen3tts.talker.rms_norm_eps", float(tk["rms_norm_eps"])),
          ("qwen3tts.tts_model_type", cfg["tts_model_type"])]
    spk = tk.get("spk_id") or {}
    if spk:
        names = sorted(spk)
        dia = tk.get("spk_is_dialect") or {}
        kv += [("qwen3tts.spk_names", names), ("qwen3tts.spk_token_ids", [int(spk[n]) for n in names]),
               ("qwen3tts.spk_dialect_token_ids",
                [int(langs[dia[n]]) if dia.get(n) and dia.get(n) in langs else 0 for n in names])]
    if langs:
        kv += [("qwen3tts.codec_language_names", ln), ("qwen3tts.codec_language_ids", [int(langs[n]) for n in ln])]
    for k in ("tts_bos_token_id", "tts_eos_token_id", "tts_pad_token_id", "im_start_token_id", "im_end_token_id",
              "assistant_token_id"):
        kv.append(("qwen3tts." + k, cfg.get(k, {"assistant_token_id": 77091}.get(k))))
    for k in ("codec_bos_id", "codec_eos_token_id", "codec_pad_id", "codec_think_id", "codec_nothink_id",
              "codec_think_bos_id", "codec_think_eos_id"):
        kv.append(("qwen3tts.talker." + k, tk[k]))
    if cfg.get("speaker_encoder_config"):
        kv.append(("qwen3tts.speaker.sample_rate", cfg["speaker_encoder_config"].get("sample_rate", 24000)))
    kv += [("tokenizer.ggml.tokens", toks), ("tokenizer.ggml.merges", merges)]
    write_gguf(os.path.join(out, "qwen3-tts-12hz-%s-%s.gguf" % (cfg["tts_model_size"], cfg["tts_model_type"])), kv, tensors)

    sc = json.load(open(os.path.join(ckpt, "speech_tokenizer", "config.json")))
    dec = sc["decoder_config"]
    cs = load_safetensors(os.path.join(ckpt, "speech_tokenizer", "model.safetensors"))
    ct = []
    q = "decoder.quantizer."
    ct.append(("codec.dec.rvq_first.codebook", divided(cs[q + "rvq_first.vq.layers.0._codebook.embedding_sum"],
                                                       cs[q + "rvq_first.vq.layers.0._codebook.cluster_usage"]), F32))
    for i in range(15):
        ct.append(("codec.dec.rvq_rest.%d.codebook" % i, divided(cs[q + "rvq_rest.vq.layers.%d._codebook.embedding_sum" % i],
                                                                 cs[q + "rvq_rest.vq.layers.%d._codebook.cluster_usage" % i]), F32))
    e = "encoder.quantizer."
    ct.append(("codec.enc.rvq.sem.cb", divided(cs[e + "semantic_residual_vector_quantizer.layers.0.codebook.embed_sum"],
                                               cs[e + "semantic_residual_vector_quantizer.layers.0.codebook.cluster_usage"]), F32))
    for i in range(15):
        ct.append(("codec.enc.rvq.ac.%d.cb" % i,
                   divided(cs[e + "acoustic_residual_vector_quantizer.layers.%d.codebook.embed_sum" % i],
                           cs[e + "acoustic_residual_vector_quantizer.layers.%d.codebook.cluster_usage" % i]), F32))
    L = {"input_layernorm.weight": ("attn_norm_w", 1), "post_attention_layernorm.weight": ("ffn_norm_w", 1),
         "self_attn.q_proj.weight": ("attn_q_w", 0), "self_attn.k_proj.weight": ("attn_k_w", 0),
         "self_attn.v_proj.weight": ("attn_v_w", 0), "self_attn.o_proj.weight": ("attn_o_w", 0),
         "self_attn_layer_scale.scale": ("attn_ls_w", 1), "mlp.gate_proj.weight": ("ffn_gate_w", 0),
         "mlp.up_proj.weight": ("ffn_up_w", 0), "mlp.down_proj.weight": ("ffn_down_w", 0),
         "mlp_layer_scale.scale": ("ffn_ls_w", 1)}
    EL = {"input_layernorm.weight": ("norm1_w", 1), "input_layernorm.bias": ("norm1_b", 1),
          "post_attention_layernorm.weight": ("norm2_w", 1), "post_attention_layernorm.bias": ("norm2_b", 1),
          "self_attn.q_proj.weight": ("attn_q_w", 0), "self_attn.k_proj.weight": ("attn_k_w", 0),
          "self_attn.v_proj.weight": ("attn_v_w", 0), "self_attn.o_proj.weight": ("attn_o_w", 0),
          "self_attn_layer_scale.scale": ("attn_ls", 1), "mlp.fc1.weight": ("fc1_w", 0), "mlp.fc2.weight": ("fc2_w", 0),
          "mlp_layer_scale.scale": ("ffn_ls", 1)}
    for k in sorted(cs):
        a, p = cs[k], k.split(".")
        wb = "_w" if p[-1] == "weight" else "_b"
        f32 = p[-1] != "weight"
        n = None
        if ("_codebook." in k or ".codebook." in k or re.search(r"\.quantizer\.rvq_(first|rest)\.input_proj\.", k)):
            continue
        if k.startswith("encoder.encoder.layers."):
            li = int(p[3])
            if li == 0:
                n = "codec.enc.seanet.init" + wb
            elif li in (1, 4, 7, 10):
                n = "codec.enc.seanet.blk.%d.%s%s" % ((li - 1) // 3, "short" if p[5] == "1" else "exp", wb)
            elif li in (3, 6, 9, 12):
                n = "codec.enc.seanet.ds.%d.%s" % ((li - 3) // 3, "w" if wb == "_w" else "b")
            elif li == 14:
                n = "codec.enc.seanet.final" + wb
        elif k.startswith("encoder.encoder_transformer.layers."):
            s, f32 = EL[".".join(p[4:])]
            n = "codec.enc.xfmr.blk.%s.%s" % (p[3], s)
        elif k == "encoder.downsample.conv.weight":
            n = "codec.enc.ds_w"
        elif k.startswith("encoder.quantizer."):
            n = "codec.enc.rvq.%s.%s_w" % ("sem" if "semantic" in k else "ac", "in" if "input" in k else "out")
            f32 = True
        elif k.startswith("decoder.quantizer.") and k.endswith("output_proj.weight"):
            n = "codec.dec.%s.out_proj_w" % p[2]
        elif k.startswith("decoder.pre_conv."):
            n = "codec.dec.pre_conv" + wb
        elif k.startswith("decoder.pre_transformer.layers."):
            s, f32 = L[".".join(p[4:])]
            n = "codec.dec.xfmr.blk.%s.%s" % (p[3], s)
        elif k.startswith("decoder.pre_transformer."):
            n = "codec.dec.xfmr." + {"input_proj": "in_proj", "output_proj": "out_proj", "norm": "norm"}[p[2]] + wb
        elif k.startswith("decoder.upsample."):
            r = ".".join(p[3:])
            u = {"0.conv": "tconv", "1.dwconv.conv": "cnx.dw", "1.norm": "cnx.norm", "1.pwconv1": "cnx.pw1",
                 "1.pwconv2": "cnx.pw2"}
            n = "codec.dec.up.%s.cnx.gamma" % p[2] if r == "1.gamma" else "codec.dec.up.%s.%s%s" % (p[2], u[".".join(p[3:-1])], wb)
        elif k.startswith("decoder.decoder."):
            i = int(p[2])
            if i == 0:
                n = "codec.dec.in_conv" + wb
            elif i == 5:
                n = "codec.dec.out_snake_" + ("a" if p[-1] == "alpha" else "b")
            elif i == 6:
                n = "codec.dec.out_conv" + wb
            elif p[4] == "0":
                n = "codec.dec.blk.%d.snake_%s" % (i - 1, "a" if p[-1] == "alpha" else "b")
            elif p[4] == "1":
                n = "codec.dec.blk.%d.tconv%s" % (i - 1, wb)
            else:
                r = p[5]
                if r.startswith("act"):
                    n = "codec.dec.blk.%d.res.%d.%s_%s" % (i - 1, int(p[4]) - 2, r, "a" if p[-1] == "alpha" else "b")
                else:
                    n = "codec.dec.blk.%d.res.%d.%s%s" % (i - 1, int(p[4]) - 2, r, wb)
        if n is None:
            if k.startswith("encoder."):
                continue
            raise SystemExit("unhandled " + k)
        t = F32 if a.ndim <= 1 or f32 or typ == "f32" else F16
        ct.append((n, a, t))
    ckv = [("general.architecture", "qwen3tts_tokenizer"),
           ("qwen3tts_codec.input_sample_rate", sc["input_sample_rate"]),
           ("qwen3tts_codec.output_sample_rate", sc["output_sample_rate"]),
           ("qwen3tts_codec.encode_downsample", sc["encode_downsample_rate"]),
           ("qwen3tts_codec.decode_upsample", sc["decode_upsample_rate"]),
           ("qwen3tts_codec.dec.n_heads", dec["num_attention_heads"]), ("qwen3tts_codec.dec.head_dim", dec["head_dim"]),
           ("qwen3tts_codec.dec.sliding_window", dec["sliding_window"]),
           ("qwen3tts_codec.dec.rope_theta", float(dec["rope_theta"])),
           ("qwen3tts_codec.dec.rms_norm_eps", float(dec["rms_norm_eps"])),
           ("qwen3tts_codec.dec.upsample_rates", dec["upsample_rates"]),
           ("qwen3tts_codec.dec.upsampling_ratios", dec["upsampling_ratios"])]
    write_gguf(os.path.join(out, "qwen3-tts-tokenizer-12hz.gguf"), ckv, ct)


# ---- llama.cpp ----

def silu(x):
    return x / (1 + np.exp(-x))


def llamacpp(ckpt, out, typ):
    """convert_hf_to_gguf.py's Qwen3TTSTalkerModel (the talker file) and, with --mmproj,
    Qwen3TTSSpeakerEncoderModel (the speaker encoder, code predictor and code2wav decoder)."""
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    tk, cp = cfg["talker_config"], cfg["talker_config"]["code_predictor_config"]
    st = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    mt = lambda n, a: F32 if a.ndim < 2 or typ == "f32" else matrix_type(n, a, typ)  # noqa: E731

    # talker: the text projection folded into the text rows, the codec rows appended, codec_head as "output"
    emb = st["talker.model.text_embedding.weight"]
    act = {"silu": silu}[tk["hidden_act"]]
    hid = act(emb @ st["talker.text_projection.linear_fc1.weight"].T + st["talker.text_projection.linear_fc1.bias"])
    folded = (hid @ st["talker.text_projection.linear_fc2.weight"].T + st["talker.text_projection.linear_fc2.bias"])
    token_embd = np.concatenate([folded.astype(np.float32), st["talker.model.codec_embedding.weight"]], 0)
    tensors = [("token_embd.weight", token_embd, mt("token_embd.weight", token_embd)),
               ("output.weight", st["talker.codec_head.weight"], mt("output", st["talker.codec_head.weight"])),
               ("output_norm.weight", st["talker.model.norm.weight"], F32)]
    for k in sorted(st):
        m = re.match(r"talker\.model\.layers\.(\d+)\.(.+)$", k)
        if m:
            n = "blk.%s.%s" % (m.group(1), LM[m.group(2)])
            tensors.append((n, st[k], mt(n, st[k])))
    # vocabulary: get_vocab_base() (text tokens padded to text_vocab_size with [PAD<i>]), then one name per codec row
    vocab, merges = vocab_tokens(ckpt)
    tcfg = json.load(open(os.path.join(ckpt, "tokenizer_config.json")))
    added = {int(i): v for i, v in tcfg.get("added_tokens_decoder", {}).items()}
    n_text = tk["text_vocab_size"]
    toks, types = ["[PAD%d]" % i for i in range(n_text)], [5] * n_text  # UNUSED
    for t, i in vocab.items():
        if i < n_text:
            toks[i], types[i] = t, 1
    for i, info in added.items():
        if i < n_text:
            toks[i], types[i] = info["content"], 3 if info.get("special") else 4
    codec = ["<|codec_%d|>" % i for i in range(tk["vocab_size"])]
    for key, val in tk.items():
        if not key.endswith("_id"):
            continue
        if isinstance(val, int) and not isinstance(val, bool):
            codec[val] = "<|%s|>" % key[:-3]
        elif isinstance(val, dict):
            for sub, v in val.items():
                codec[v] = "<|%s_%s|>" % (key[:-3], sub)
    toks += codec
    types += [3] * len(codec)  # CONTROL
    n_vocab = n_text + tk["vocab_size"]
    eos = n_text + tk["codec_eos_token_id"]
    kv = [("general.architecture", "qwen3tts"), ("general.name", "Qwen3-TTS"),
          ("qwen3tts.block_count", tk["num_hidden_layers"]), ("qwen3tts.context_length", tk["max_position_embeddings"]),
          ("qwen3tts.embedding_length", tk["hidden_size"]), ("qwen3tts.feed_forward_length", tk["intermediate_size"]),
          ("qwen3tts.attention.head_count", tk["num_attention_heads"]),
          ("qwen3tts.attention.head_count_kv", tk["num_key_value_heads"]),
          ("qwen3tts.attention.key_length", tk["head_dim"]), ("qwen3tts.attention.value_length", tk["head_dim"]),
          ("qwen3tts.rope.freq_base", float(tk["rope_theta"])),
          ("qwen3tts.attention.layer_norm_rms_epsilon", float(tk["rms_norm_eps"])),
          ("tokenizer.ggml.model", "gpt2"), ("tokenizer.ggml.pre", "qwen2"), ("tokenizer.ggml.tokens", toks),
          ("tokenizer.ggml.token_type", types), ("tokenizer.ggml.merges", merges),
          ("tokenizer.ggml.eos_token_id", eos), ("tokenizer.ggml.add_eos_token", False),
          ("qwen3tts.suppress_tokens", [i for i in range(n_vocab - 1024, n_vocab) if i != eos])]
    write_gguf(os.path.join(out, "Qwen3-TTS-12Hz-%s-%s-%s.gguf" % (cfg["tts_model_size"], cfg["tts_model_type"], typ.upper())),
               kv, tensors)

    # mmproj: speaker encoder (a.*), code predictor (a.gen.code.*), code2wav (a.gen.wav.*)
    mm = []

    def add(n, a, t=None):
        mm.append((n, a, t if t is not None else mt(n, a)))

    CPL = {"input_layernorm.weight": "ln1.weight", "post_attention_layernorm.weight": "ln2.weight",
           "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
           "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_out.weight",
           "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
           "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
           "mlp.down_proj.weight": "ffn_down.weight"}
    ncb = tk["num_code_groups"] - 1
    add("a.gen.code.out_embd.weight", st["talker.model.codec_embedding.weight"])
    add("a.gen.code.output_norm.weight", st["talker.code_predictor.model.norm.weight"])
    add("a.gen.code.embd.weight", np.stack([st["talker.code_predictor.model.codec_embedding.%d.weight" % i]
                                            for i in range(ncb)]), F32 if typ == "f32" else F16)
    add("a.gen.code.head.weight", np.stack([st["talker.code_predictor.lm_head.%d.weight" % i] for i in range(ncb)]),
        F32 if typ == "f32" else F16)
    for k in sorted(st):
        m = re.match(r"talker\.code_predictor\.model\.layers\.(\d+)\.(.+)$", k)
        if m:
            add("a.gen.code.blk.%s.%s" % (m.group(1), CPL[m.group(2)]), st[k])
        elif k.startswith("talker.code_predictor.small_to_mtp_projection."):
            add("a.gen.code.proj_in." + k.rsplit(".", 1)[1], st[k])
        elif k.startswith("speaker_encoder."):
            p = k.split(".")
            if p[1] == "blocks" and p[2] == "0":
                n = "a.conv1d.0." + p[-1]
            elif p[1] == "blocks" and p[3] == "res2net_block":
                n = "a.blk.%s.res2.%s.%s" % (p[2], p[5], p[-1])
            elif p[1] == "blocks":
                n = "a.blk.%s.%s.%s" % (p[2], {"tdnn1": "conv_pw1", "tdnn2": "conv_pw2", "se_block": "se_" + p[4]}[p[3]], p[-1])
            else:
                n = {"mfa": "a.conv_out", "asp": "a.asp_attn" if p[2] == "conv" else "a.asp_tdnn", "fc": "mm.a.fc"}[p[1]] + "." + p[-1]
            add(n, st[k], F32 if st[k].ndim < 2 or typ == "f32" else F16)
    sc = json.load(open(os.path.join(ckpt, "speech_tokenizer", "config.json")))
    dec = sc["decoder_config"]
    cs = load_safetensors(os.path.join(ckpt, "speech_tokenizer", "model.safetensors"))
    q = "decoder.quantizer."

    def book(pre, i):
        return divided(cs[q + "%s.vq.layers.%d._codebook.embedding_sum" % (pre, i)],
                       cs[q + "%s.vq.layers.%d._codebook.cluster_usage" % (pre, i)])

    def conv(n, a):  # tensor_force_quant: convolutions F16, transposed ones F32
        add(n, a, F32 if typ == "f32" or a.ndim < 2 or n.endswith(".conv.weight") and (".up.blk." in n or ".dac.blk." in n)
            else F16)

    add("a.gen.wav.quant.first.in_proj.weight", cs[q + "rvq_first.input_proj.weight"][..., 0])
    add("a.gen.wav.quant.first.out_proj.weight", cs[q + "rvq_first.output_proj.weight"][..., 0])
    add("a.gen.wav.quant.first.codebook.weight", book("rvq_first", 0))
    add("a.gen.wav.quant.rest.in_proj.weight", cs[q + "rvq_rest.input_proj.weight"][..., 0])
    add("a.gen.wav.quant.rest.out_proj.weight", cs[q + "rvq_rest.output_proj.weight"][..., 0])
    add("a.gen.wav.quant.rest.codebook.weight", np.stack([book("rvq_rest", i) for i in range(ncb)]))
    conv("a.gen.wav.pre_conv.weight", cs["decoder.pre_conv.conv.weight"])
    add("a.gen.wav.pre_conv.bias", cs["decoder.pre_conv.conv.bias"])
    for s, d in (("input_proj", "in_proj"), ("output_proj", "out_proj")):
        add("a.gen.wav.tfm.%s.weight" % d, cs["decoder.pre_transformer.%s.weight" % s])
        add("a.gen.wav.tfm.%s.bias" % d, cs["decoder.pre_transformer.%s.bias" % s])
    add("a.gen.wav.tfm.output_norm.weight", cs["decoder.pre_transformer.norm.weight"])
    TL = {"input_layernorm.weight": "ln1", "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k",
          "self_attn.v_proj.weight": "attn_v", "self_attn.o_proj.weight": "attn_out",
          "self_attn_layer_scale.scale": "ls1", "post_attention_layernorm.weight": "ln2",
          "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down",
          "mlp_layer_scale.scale": "ls2"}
    for b in range(dec["num_hidden_layers"]):
        for key, n in TL.items():
            add("a.gen.wav.tfm.blk.%d.%s.weight" % (b, n), cs["decoder.pre_transformer.layers.%d.%s" % (b, key)])
    UP = {"0.conv": "conv", "1.dwconv.conv": "dwconv", "1.norm": "norm", "1.pwconv1": "pw1", "1.pwconv2": "pw2"}
    for b in range(len(dec["upsampling_ratios"])):
        for key, n in UP.items():
            conv("a.gen.wav.up.blk.%d.%s.weight" % (b, n), cs["decoder.upsample.%d.%s.weight" % (b, key)])
            add("a.gen.wav.up.blk.%d.%s.bias" % (b, n), cs["decoder.upsample.%d.%s.bias" % (b, key)])
        add("a.gen.wav.up.blk.%d.gamma" % b, cs["decoder.upsample.%d.1.gamma" % b])
    conv("a.gen.wav.dac.entry.weight", cs["decoder.decoder.0.conv.weight"])
    add("a.gen.wav.dac.entry.bias", cs["decoder.decoder.0.conv.bias"])

    def snake(n, pre):  # folded: exp(alpha), 1 / (exp(beta) + 1e-9)
        add(n + ".alpha", np.exp(cs[pre + ".alpha"]).astype(np.float32))
        add(n + ".beta", (1.0 / (np.exp(cs[pre + ".beta"]) + 1e-9)).astype(np.float32))

    for b in range(len(dec["upsample_rates"])):
        p = "decoder.decoder.%d.block" % (b + 1)
        snake("a.gen.wav.dac.blk.%d.snake" % b, p + ".0")
        conv("a.gen.wav.dac.blk.%d.conv.weight" % b, cs[p + ".1.conv.weight"])
        add("a.gen.wav.dac.blk.%d.conv.bias" % b, cs[p + ".1.conv.bias"])
        for x in range(3):
            r = "a.gen.wav.dac.blk.%d.res.%d" % (b, x)
            snake(r + ".act1", "%s.%d.act1" % (p, x + 2))
            conv(r + ".conv1.weight", cs["%s.%d.conv1.conv.weight" % (p, x + 2)])
            add(r + ".conv1.bias", cs["%s.%d.conv1.conv.bias" % (p, x + 2)])
            snake(r + ".act2", "%s.%d.act2" % (p, x + 2))
            conv(r + ".conv2.weight", cs["%s.%d.conv2.conv.weight" % (p, x + 2)])
            add(r + ".conv2.bias", cs["%s.%d.conv2.conv.bias" % (p, x + 2)])
    snake("a.gen.wav.dac.post_snake", "decoder.decoder.5")
    conv("a.gen.wav.dac.post_conv.weight", cs["decoder.decoder.6.conv.weight"])
    add("a.gen.wav.dac.post_conv.bias", cs["decoder.decoder.6.conv.bias"])
    mkv = [("general.architecture", "clip"), ("clip.has_audio_encoder", True),
           ("clip.audio.projector_type", "qwen3tts_spkenc"), ("clip.audio.projection_dim", tk["hidden_size"]),
           ("clip.audio.num_mel_bins", 128), ("clip.audio.block_count", 3), ("clip.audio.embedding_length", 1536),
           ("clip.audio.attention.head_count", 1), ("clip.audio.feed_forward_length", 1536),
           ("clip.audio.attention.layer_norm_epsilon", 1e-5), ("clip.has_gen_audio_encoder", True),
           ("clip.gen.audio.projector_type", "qwen3tts_gen"), ("clip.gen.audio.projection_dim", tk["hidden_size"]),
           ("clip.gen.audio.embedding_length", cp["hidden_size"]),
           ("clip.gen.audio.feed_forward_length", cp["intermediate_size"]),
           ("clip.gen.audio.block_count", cp["num_hidden_layers"]),
           ("clip.gen.audio.attention.head_count", cp["num_attention_heads"]),
           ("clip.gen.audio.attention.head_count_kv", cp["num_key_value_heads"]),
           ("clip.gen.audio.attention.layer_norm_epsilon", float(cp["rms_norm_eps"]))]
    write_gguf(os.path.join(out, "mmproj-Qwen3-TTS-12Hz-%s-%s-%s.gguf" % (cfg["tts_model_size"], cfg["tts_model_type"],
                                                                          typ.upper())), mkv, mm)


def llamacpp_reference(ckpt, out, _typ):
    """The official folder as llama.cpp runs it: the decoder's attention as clip.cpp fixes it (head_dim 64,
    window 72, epsilon 1e-5, rope base 1e4; the heads follow from q_proj), everything else linked."""
    for f in os.listdir(ckpt):
        if f != "speech_tokenizer":
            os.symlink(os.path.abspath(os.path.join(ckpt, f)), os.path.join(out, f))
    os.makedirs(os.path.join(out, "speech_tokenizer"), exist_ok=True)
    src = os.path.join(ckpt, "speech_tokenizer")
    for f in os.listdir(src):
        if f != "config.json":
            os.symlink(os.path.abspath(os.path.join(src, f)), os.path.join(out, "speech_tokenizer", f))
    sc = json.load(open(os.path.join(src, "config.json")))
    dec = sc["decoder_config"]
    cs = load_safetensors(os.path.join(src, "model.safetensors"))
    heads = cs["decoder.pre_transformer.layers.0.self_attn.q_proj.weight"].shape[0] // 64
    dec.update(head_dim=64, num_attention_heads=heads, num_key_value_heads=heads, sliding_window=72, rms_norm_eps=1e-5,
               rope_theta=10000)
    json.dump(sc, open(os.path.join(out, "speech_tokenizer", "config.json"), "w"), indent=2)

# ---- Transformers-native ----

def transformers(ckpt, out, _typ):
    os.makedirs(os.path.join(out, "speech_tokenizer"), exist_ok=True)
    st = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    new = {}
    for k, a in st.items():
        n = (k.replace("text_projection.linear_fc1", "text_projection.linear_1")
             .replace("text_projection.linear_fc2", "text_projection.linear_2")
             .replace("talker.model.codec_embedding", "talker.model.embed_tokens"))
        new[n[len("talker."):] if n.startswith("talker.") else n] = a
    save_safetensors(os.path.join(out, "model.safetensors"), new)
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    tk = cfg["talker_config"]
    rp = dict(tk.pop("rope_scaling") or {})
    rp["rope_theta"] = tk.pop("rope_theta")
    rp["interleaved"] = False
    tk["rope_parameters"] = rp
    cp = tk["code_predictor_config"]
    cp["rope_parameters"] = {"rope_type": "default", "rope_theta": cp.pop("rope_theta")}
    cfg.pop("tts_model_type")  # the later revision keys Base off speaker_encoder_config
    if not cfg.get("speaker_encoder_config"):
        cfg["speaker_encoder_config"] = None
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    for f in ("generation_config.json", "vocab.json", "merges.txt", "tokenizer_config.json"):
        with open(os.path.join(ckpt, f), "rb") as src, open(os.path.join(out, f), "wb") as dst:
            dst.write(src.read())
    cs = load_safetensors(os.path.join(ckpt, "speech_tokenizer", "model.safetensors"))
    cn = {}
    for k, a in cs.items():
        n = (k.replace("decoder.quantizer.rvq_first.", "decoder.quantizer.semantic_residual_vector_quantizer.")
             .replace("decoder.quantizer.rvq_rest.", "decoder.quantizer.acoustic_residual_vector_quantizer.")
             .replace(".vq.layers.", ".layers.").replace("._codebook.", ".codebook.").replace(".embedding_sum", ".embed_sum")
             .replace("decoder.pre_transformer.input_proj.", "decoder.input_proj.")
             .replace("decoder.pre_transformer.output_proj.", "decoder.output_proj."))
        cn[n] = a
    save_safetensors(os.path.join(out, "speech_tokenizer", "model.safetensors"), cn)
    sc = json.load(open(os.path.join(ckpt, "speech_tokenizer", "config.json")))
    sc["model_type"] = "qwen3_tts_tokenizer_multi_codebook"
    json.dump(sc, open(os.path.join(out, "speech_tokenizer", "config.json"), "w"), indent=2)


def blocks(_ckpt, out, _typ):
    """blocks.gguf: random 8x512 matrices in each block type next to their f32 source ("<type>.src")."""
    rng = np.random.default_rng(46)
    tensors = []
    for name, (t, _, _) in sorted(QUANT.items()):
        a = (rng.standard_normal((8, 512)) * rng.uniform(0.01, 3.0, (8, 1))).astype(np.float32)
        tensors += [(name, a, t), (name + ".src", a, F32)]
    write_gguf(os.path.join(out, "blocks.gguf"), [("general.architecture", "blocks")], tensors)


def main():
    args = sys.argv[1:]
    global ARCH_OVERRIDE
    typ = "f32"
    if "--arch" in args:
        i = args.index("--arch")
        ARCH_OVERRIDE = args[i + 1]
        del args[i:i + 2]
    if "--type" in args:
        i = args.index("--type")
        typ = args[i + 1]
        del args[i:i + 2]
    if len(args) != 3:
        raise SystemExit(__doc__)
    layout, ckpt, out = args
    os.makedirs(out, exist_ok=True)
    {"qwentts": qwentts, "crispasr": crispasr, "llamacpp": llamacpp, "llamacpp-reference": llamacpp_reference,
     "transformers": transformers,
     "blocks": blocks}[layout](ckpt, out, typ)


if __name__ == "__main__":
    main()
