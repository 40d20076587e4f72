// Argument checks shared by every codec's encode path. They throw std::invalid_argument: a
// wrong tensor or chunking is a programming error of the caller, not corrupt input bytes
// (those raise DecodeError).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"

namespace gradwire {

/// Requires a defined, contiguous, 1-D float32 CPU tensor (the contract in Codec.h). `who`
/// names the caller in the message, e.g. "topk encode". `on_device`: a codec that
/// encodes_on_device() also accepts a tensor on an accelerator.
void check_gradient(const at::Tensor& grad, const std::string& who, bool on_device = false);

/// The tensor to hand `codec`'s encode: `grad` itself where the codec reads it where it lives
/// (host memory, or an accelerator for a codec that encodes_on_device()), else a host copy.
at::Tensor codec_input(const Codec& codec, const at::Tensor& grad);

/// Requires bounds.front() == 0, bounds.back() == numel, non-decreasing, at least two entries.
/// Equal neighbours (empty chunks) are allowed: a ring with more workers than elements has them.
void check_chunk_bounds(std::int64_t numel, const std::vector<std::int64_t>& bounds);

/// Per-worker codec state over the flat gradient (residual, momentum, ...): created as zeros of
/// length n on first use; afterwards a gradient of another length is a caller error (one codec
/// object serves one flat gradient).
void ensure_state(at::Tensor& state, std::int64_t n, const std::string& who);

/// The same for a codec that encodes where `grad` lives: zeros like `grad` on first use, and a
/// state that is elsewhere (loaded from a state file, on the host) moved to grad's device.
void ensure_state(at::Tensor& state, const at::Tensor& grad, const std::string& who);

}  // namespace gradwire
