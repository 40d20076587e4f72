#include "nodes/schemes/DeviceStreams.h"

#include <algorithm>

#include <ns3/simulator.h>

namespace gradwire {

namespace {
double now() { return ns3::Simulator::Now().GetSeconds(); }
}  // namespace

void DeviceStreams::charge(CodecOp op, double seconds) {
  if (seconds <= 0) return;
  double& stream = op == CodecOp::kEncode ? compute_free_ : communication_free_;
  stream = std::max(stream, now()) + seconds;
  last_end_ = stream;
  codec_s_ += seconds;
}

double DeviceStreams::run_compute(double seconds) {
  compute_free_ = std::max(compute_free_, now()) + seconds;
  return compute_free_;
}

double DeviceStreams::send_ready_at() const { return std::max(last_end_, now()); }

double DeviceStreams::encode_starts_at() const { return std::max(compute_free_, now()); }

void DeviceStreams::release_sends_at(double instant) { last_end_ = instant; }

double DeviceStreams::idle_at() const {
  return std::max({compute_free_, communication_free_, now()});
}

}  // namespace gradwire
