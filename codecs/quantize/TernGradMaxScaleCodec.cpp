#include "codecs/quantize/TernGradMaxScaleCodec.h"

#include <algorithm>
#include <stdexcept>

#include <ATen/ATen.h>

#include "codecs/wire/WireFormat.h"

namespace gradwire {

TernGradMaxScaleCodec::TernGradMaxScaleCodec(double clip, const CodecContext& ctx)
    : MultiRoundCodec(CodecTraits{"terngrad"}),
      local_(clip, 0.0, ctx), workers_(std::max(1, ctx.workers)) {}

Round TernGradMaxScaleCodec::begin_exchange(const at::Tensor& grad) {
  grad_ = grad;
  Round round;
  round.op = RoundOp::kReduce;
  round.payload = local_.propose_scales(grad);
  return round;
}

at::Tensor TernGradMaxScaleCodec::reduce_round(int round, const std::vector<ByteSpan>& payloads) {
  if (payloads.empty()) throw DecodeError("terngrad: a reduce round without payloads");
  if (round == 0) {
    const std::vector<float> scales = TernGradCodec::max_proposed_scales(payloads);
    at::Tensor out = at::empty({static_cast<std::int64_t>(scales.size())}, at::kFloat);
    std::copy(scales.begin(), scales.end(), out.data_ptr<float>());
    return out;
  }
  if (round != 1) return MultiRoundCodec::reduce_round(round, payloads);
  // Equal scales everywhere: the codes add in the compressed domain, decoded once.
  Bytes acc(payloads[0].data, payloads[0].data + payloads[0].size);
  for (std::size_t r = 1; r < payloads.size(); ++r) local_.accumulate(acc, payloads[r]);
  return local_.decode(ByteSpan(acc));
}

std::optional<Round> TernGradMaxScaleCodec::continue_exchange(int round, RoundOutcome&& outcome) {
  if (!outcome.sum.defined()) throw std::logic_error("terngrad: a round delivered no result");
  if (round == 0) {
    const at::Tensor agreed = outcome.sum.contiguous();
    const float* a = agreed.data_ptr<float>();
    Round next;
    next.op = RoundOp::kReduce;
    next.payload = local_.encode_with_scales(grad_, std::vector<float>(a, a + agreed.numel()));
    return next;
  }
  result_ = outcome.sum.div(static_cast<double>(workers_));
  grad_ = at::Tensor();
  return std::nullopt;
}

CodecWork TernGradMaxScaleCodec::round_work(int call, std::int64_t numel) const {
  const double n = static_cast<double>(numel);
  switch (call) {
    case 0: return CodecWork::memory(4 * n) + CodecWork::compute(3 * n);
    case 1: return CodecWork::memory(4 * n + n / 4) + CodecWork::compute(n * (4 + kFlopsPerRandomNumber));
    case 2: return CodecWork::memory(8 * n) + CodecWork::compute(n);
    default: return {};
  }
}

CodecWork TernGradMaxScaleCodec::reduce_work(int round, std::int64_t numel, std::size_t payloads,
                                             std::uint64_t payload_bytes) const {
  if (round == 0 || payloads == 0) return CodecWork::memory(static_cast<double>(payload_bytes));
  const double count = static_cast<double>(payloads);
  const auto one = static_cast<std::uint64_t>(static_cast<double>(payload_bytes) / count);
  return local_.work(CodecOp::kAccumulate, numel, one) * (count - 1) +
         local_.work(CodecOp::kDecode, numel, one);
}

}  // namespace gradwire
