// A codec decorator that logs what its inner codec did (codecs/CodecCallLog.h) while passing
// every call through unchanged: the same traits, payloads, state and declared work. A
// run that records a step trace wraps each codec in one, beneath the timing decorator, so the
// log also holds the work the timer asked for. A template over the base (Codec or
// MultiRoundCodec) like TimedCodecBase, so the multi-round decorator is itself a
// MultiRoundCodec; defined in RecordingCodec.cpp for those two bases only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecCallLog.h"

namespace gradwire {

template <class Base>
class RecordingCodecBase : public Base {
 public:
  /// `inner` and `log` must outlive this object.
  RecordingCodecBase(Base& inner, CodecCallLog& log)
      : Base(inner.traits(), inner), inner_(inner), log_(log) {}

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override { inner_.accumulate(acc, other); }
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  void observe_aggregate(const at::Tensor& update) override;
  Bytes save_state() const override { return inner_.save_state(); }
  void load_state(ByteSpan state) override { inner_.load_state(state); }
  /// The inner codec's work, logged: with the call it describes (encode, finalize, observe)
  /// or by its key (decode, accumulate).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;

 protected:
  /// Appends a call and returns it.
  CodecCall& log_call(CodecCall::Kind kind) const;
  /// Attaches declared work to the latest call of `kind` (the call the work describes).
  void attach_work(CodecCall::Kind kind, const CodecWork& work) const;

  Base& inner_;
  CodecCallLog& log_;
};

/// Elements of `t` whose bit pattern is not +0.0 (any count of non-zero elements for other
/// types): what decides the size of an exact encoding of it (codecs/ExactEncoding.h).
std::int64_t nonzero_bits(const at::Tensor& t);

/// Wraps `inner` (a MultiRoundCodec keeps its rounds) to log into `log`.
std::unique_ptr<Codec> record_codec(Codec& inner, CodecCallLog& log);

}  // namespace gradwire
