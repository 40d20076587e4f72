// float32 tensors in and out of payloads, shared by the codecs that carry plain float arrays
// (PowerSGD factors, GradiVeQ coefficients, LGC values and codes). The reader claims the bytes
// through ByteReader first, so a short payload raises DecodeError, never an overread.
#pragma once

#include <cstdint>

#include "codecs/wire/WireFormat.h"

namespace gradwire {

/// Claims `count` little-endian float32 values and returns them as a fresh 1-D tensor.
at::Tensor read_f32_tensor(ByteReader& reader, std::int64_t count, const char* field);

/// Appends every element of `t` (converted to contiguous float32) as little-endian float32.
void write_f32_tensor(ByteWriter& writer, const at::Tensor& t);

}  // namespace gradwire
