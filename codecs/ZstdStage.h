// A lossless zstd stage over any codec's payload (`"zstd": true` in a codec object): the
// entropy-coding family the literature names beside sparsification and quantisation. The inner
// payload is compressed whole with libzstd (level 3, zstd's default, ZSTD_CLEVEL_DEFAULT) and
// wrapped in its own header:
//   header (CodecId::kZstd, version 1, n = the inner payload's element count)
//   | u32 inner payload size | zstd frame (content size stated in the frame)
// Decoding checks the frame's stated size against the u32 and a bound derived from the
// decoder's element limit before allocating, then hands the bytes to the inner decoder.
// Compressed bytes do not add: the stage declares Aggregation::kDecodeThenSum even around a
// summable codec (ring all-reduce then all-gathers).
#pragma once

#include <memory>
#include <string>

#include "codecs/Codec.h"

namespace gradwire {

class ZstdStage : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  static constexpr int kLevel = 3;
  /// `max_elements` bounds the element count a payload may state (the worker's gradient length).
  /// Its traits are the inner codec's name and momentum, decode-then-sum, encoded on the host,
  /// no loss tolerance.
  ZstdStage(std::unique_ptr<Codec> inner, std::uint64_t max_elements);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode: the inner encode of the inner payload plus zstd over it (read it, write the
  /// frame; kZstdCompressOpsPerByte per input byte). Decode: zstd back (kZstdDecompressOpsPerByte
  /// per output byte) plus the inner decode. The inner size comes from the last encode's ratio.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// zstd level 3 on one core: ~350 MB/s compressing and ~1.2 GB/s decompressing at
  /// ~3.5 GHz (zstd's README benchmark table), i.e. ~10 and ~3 cycles per byte, declared as
  /// that many operations.
  static constexpr double kZstdCompressOpsPerByte = 10.0;
  static constexpr double kZstdDecompressOpsPerByte = 3.0;
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  void observe_aggregate(const at::Tensor& update) override { inner_->observe_aggregate(update); }
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  Bytes save_state() const override { return inner_->save_state(); }
  void load_state(ByteSpan state) override { inner_->load_state(state); }
  const Codec& inner() const { return *inner_; }

  Bytes compress(const Bytes& inner_payload) const;
  /// The inner payload inside a zstd-stage payload (validated; not decoded further).
  Bytes decompress(ByteSpan payload) const;

 private:
  std::unique_ptr<Codec> inner_;
  std::uint64_t max_elements_;
  // Payload bytes before and after the last encode's compression: work() declares the inner
  // codec's work on the inner size, and a decode's inner size from this ratio (1 before any
  // encode, e.g. on a server's decoding instance).
  std::uint64_t last_inner_bytes_ = 0;
  std::uint64_t last_outer_bytes_ = 0;
};

}  // namespace gradwire
