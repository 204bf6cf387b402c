#!/usr/bin/env bash
# Makes a model folder at the real 0.6B (or 1.7B) CustomVoice dimensions
# with seeded random weights: the text files of a tiny test fixture, its
# config.json patched to the real dimensions, and the weights written by
# bench_random_folder (bf16 LM, f32 speech tokenizer, as shipped).
#
#   bench/make_random_folder.sh OUT_DIR [SIZE] [BUILD_DIR]
#   SIZE: 0.6b (default) or 1.7b; BUILD_DIR: where bench_random_folder is (build)
#   env: TEMPLATE (the fixture folder; default ../shared/golden/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny)
set -euo pipefail
OUT=${1:?usage: make_random_folder.sh OUT_DIR [SIZE] [BUILD_DIR]}
SIZE=${2:-0.6b}
BUILD=${3:-build}
TEMPLATE=${TEMPLATE:-../shared/golden/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny}
command -v jq >/dev/null || { echo "make_random_folder.sh: needs jq" >&2; exit 1; }
[ -x "$BUILD/bench/bench_random_folder" ] || { echo "make_random_folder.sh: build bench_random_folder first" >&2; exit 1; }
[ -f "$TEMPLATE/vocab.json" ] || { echo "make_random_folder.sh: no fixture at $TEMPLATE (set TEMPLATE)" >&2; exit 1; }
case "$SIZE" in
  0.6b) H=1024; I=3072; MS=0b6 ;;
  1.7b) H=2048; I=6144; MS=1b7 ;;
  *) echo "make_random_folder.sh: SIZE is 0.6b or 1.7b" >&2; exit 1 ;;
esac
mkdir -p "$OUT/speech_tokenizer"
for f in generation_config.json merges.txt vocab.json tokenizer_config.json preprocessor_config.json; do
  [ -f "$TEMPLATE/$f" ] && cp -f "$TEMPLATE/$f" "$OUT/$f"
done
cp -f "$TEMPLATE/speech_tokenizer/preprocessor_config.json" "$OUT/speech_tokenizer/" 2>/dev/null || true
jq --argjson h "$H" --argjson i "$I" --arg ms "$MS" '
  .tts_model_size = $ms |
  .talker_config += {hidden_size: $h, intermediate_size: $i, num_hidden_layers: 28, num_attention_heads: 16,
                     num_key_value_heads: 8, head_dim: 128, text_hidden_size: 2048} |
  .talker_config.rope_scaling.mrope_section = [24, 20, 20] |
  .talker_config.code_predictor_config += {hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 5,
                     num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128,
                     layer_types: [range(5) | "full_attention"]}' \
  "$TEMPLATE/config.json" > "$OUT/config.json"
jq '.decoder_config += {latent_dim: 1024, codebook_dim: 512, decoder_dim: 1536, hidden_size: 512,
                        intermediate_size: 1024, num_hidden_layers: 8, num_attention_heads: 16,
                        num_key_value_heads: 16, head_dim: 64, vector_quantization_hidden_dimension: 512}' \
  "$TEMPLATE/speech_tokenizer/config.json" > "$OUT/speech_tokenizer/config.json"
"$BUILD/bench/bench_random_folder" "$OUT" "$SIZE"
