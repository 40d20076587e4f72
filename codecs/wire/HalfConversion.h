// float32 <-> IEEE binary16 (fp16) and bfloat16 for whole arrays, little-endian 16-bit words at
// any byte alignment, rounding to nearest even exactly as c10::Half and c10::BFloat16 do (NaN
// stays NaN). Why not ATen's copy_ between dtypes: beyond the caches it measured 160 ms to
// encode and 297 ms to decode 25M elements on the development machine, 30-50x one memcpy;
// these loops run at memory speed (F16C instructions for fp16 where the CPU has them).
#pragma once

#include <cstdint>

namespace gradwire {

/// dst[2i..2i+1] := fp16 or bf16 bits of src[i], i < n. dst holds 2n bytes.
void floats_to_fp16(const float* src, std::uint64_t n, std::uint8_t* dst);
void floats_to_bf16(const float* src, std::uint64_t n, std::uint8_t* dst);

/// dst[i] := the float32 value of the 16-bit word at src + 2i, i < n.
void fp16_to_floats(const std::uint8_t* src, std::uint64_t n, float* dst);
void bf16_to_floats(const std::uint8_t* src, std::uint64_t n, float* dst);

}  // namespace gradwire
