#include "codecs/CodecWork.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gradwire {

const char* codec_op_name(CodecOp op) {
  switch (op) {
    case CodecOp::kEncode: return "encode";
    case CodecOp::kDecode: return "decode";
    case CodecOp::kAccumulate: return "accumulate";
    case CodecOp::kFinalize: return "finalize";
    case CodecOp::kRound: return "round";
    case CodecOp::kObserve: return "observe";
  }
  return "unknown";
}

CodecWork& CodecWork::operator+=(const CodecWork& other) {
  memory_bytes += other.memory_bytes;
  flops += other.flops;
  select_elements += other.select_elements;
  select_compares += other.select_compares;
  return *this;
}

CodecWork& CodecWork::operator*=(double factor) {
  memory_bytes *= factor;
  flops *= factor;
  select_elements *= factor;
  select_compares *= factor;
  return *this;
}

CodecWork CodecWork::memory(double bytes) {
  CodecWork w;
  w.memory_bytes = bytes;
  return w;
}

CodecWork CodecWork::compute(double flops) {
  CodecWork w;
  w.flops = flops;
  return w;
}

CodecWork CodecWork::selection(double n, double k) {
  CodecWork w;
  if (n <= 0) return w;
  w.select_elements = n;
  w.select_compares = n * std::log2(std::max(k, 2.0));
  return w;
}

CodecWork CodecWork::gather(double n, double k) {
  return memory(std::min(4.0 * std::max(n, 0.0), kCacheLineBytes * std::max(k, 0.0)));
}

CodecWork operator+(CodecWork a, const CodecWork& b) { return a += b; }
CodecWork operator*(CodecWork a, double factor) { return a *= factor; }

bool operator==(const CodecWork& a, const CodecWork& b) {
  return a.memory_bytes == b.memory_bytes && a.flops == b.flops &&
         a.select_elements == b.select_elements && a.select_compares == b.select_compares;
}

double seconds_on(const CodecWork& work, const CodecDevice& device) {
  const auto positive = [](double x) { return x > 0.0 && std::isfinite(x); };
  if (!positive(device.memory_bandwidth) || !positive(device.flops_per_s)) {
    throw std::invalid_argument("codec device: memory_bandwidth and flops_per_s must be positive "
                                "and finite, got " + std::to_string(device.memory_bandwidth) +
                                " B/s and " + std::to_string(device.flops_per_s) + " op/s");
  }
  return work.memory_bytes / device.memory_bandwidth +
         (work.flops + work.select_compares) / device.flops_per_s;
}

}  // namespace gradwire
