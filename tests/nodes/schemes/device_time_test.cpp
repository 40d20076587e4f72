// Codec work costs simulated time on the device that does it: the two streams' rules, and a
// codec whose encode is made 100x slower finishing its ring all-reduce measurably later.
#include <memory>

#include <gtest/gtest.h>
#include <ns3/simulator.h>
#include <torch/torch.h>

#include "NetworkFixture.h"
#include "OneTorchThread.h"
#include "codecs/DenseCodec.h"
#include "codecs/TimedCodec.h"
#include "common/WorkStopwatch.h"
#include "nodes/schemes/DeviceStreams.h"
#include "nodes/schemes/DeviceTimedEndpoint.h"
#include "nodes/schemes/RingAllReduce.h"

namespace gradwire {
namespace {

TEST(DeviceStreams, EncodingDelaysBackwardAndReceivedWorkDoesNot) {
  DeviceStreams d;
  // Backward stretch of 10 ms, then a 2 ms encode queued behind it, then the next stretch.
  EXPECT_DOUBLE_EQ(d.run_compute(0.010), 0.010);
  d.charge(CodecOp::kEncode, 0.002);
  EXPECT_DOUBLE_EQ(d.send_ready_at(), 0.012);  // the payload leaves when encoded
  // Work on received payloads runs on the communication stream, beside backward.
  d.charge(CodecOp::kAccumulate, 0.001);
  EXPECT_DOUBLE_EQ(d.send_ready_at(), 0.001);
  EXPECT_DOUBLE_EQ(d.run_compute(0.005), 0.017);  // after the encode, not after the accumulate
  d.charge(CodecOp::kDecode, 0.003);               // queues behind the accumulate
  EXPECT_DOUBLE_EQ(d.send_ready_at(), 0.004);
  EXPECT_DOUBLE_EQ(d.idle_at(), 0.017);            // the optimizer waits for both streams
  EXPECT_DOUBLE_EQ(d.codec_seconds(), 0.006);
}

/// fp32 with an encode that computes for a set CPU time of its thread, as a slow
/// implementation would (measured codec time charges the thread's CPU time).
class SpinningCodec : public DenseCodec {
 public:
  explicit SpinningCodec(double spin_s) : spin_s_(spin_s) {}
  Bytes encode(const torch::Tensor& grad) override {
    const double until = thread_cpu_seconds() + spin_s_;
    volatile unsigned sink = 0;
    while (thread_cpu_seconds() < until) sink = sink + 1;
    return DenseCodec::encode(grad);
  }

 private:
  double spin_s_;
};

/// Simulated seconds until every worker holds the aggregate, codec time measured at scale 1.
double ring_with_timed_codec(double spin_s) {
  const int n = 4;
  EthernetConfig config;
  config.rate_bps = 1e9;
  testing::StarWithMessengers star(config, n);
  std::vector<std::unique_ptr<SpinningCodec>> codecs;
  std::vector<std::unique_ptr<DeviceStreams>> devices;
  std::vector<std::unique_ptr<Codec>> timed;
  std::vector<std::unique_ptr<DeviceTimedEndpoint>> endpoints;
  std::vector<Codec*> codec_ptrs;
  std::vector<Endpoint*> endpoint_ptrs;
  const CodecTiming timing{CodecTiming::Mode::kMeasured, 1.0, {}};
  for (int r = 0; r < n; ++r) {
    codecs.push_back(std::make_unique<SpinningCodec>(spin_s));
    devices.push_back(std::make_unique<DeviceStreams>());
    timed.push_back(time_codec(*codecs.back(), *devices.back(), timing));
    endpoints.push_back(std::make_unique<DeviceTimedEndpoint>(*star.raw(r, 1)[0], *devices.back()));
    codec_ptrs.push_back(timed.back().get());
    endpoint_ptrs.push_back(endpoints.back().get());
  }
  RingAllReduce ring(endpoint_ptrs, codec_ptrs);
  torch::manual_seed(1);
  const at::Tensor gradient = torch::randn({100000});
  double last = 0;
  for (int r = 0; r < n; ++r) {
    ns3::Simulator::Schedule(ns3::Seconds(0), [&, r] {
      ring.contribute(r, 0, gradient, [&](const at::Tensor&) {
        last = std::max(last, ns3::Simulator::Now().GetSeconds());
      });
    });
  }
  ns3::Simulator::Run();
  return last;
}

TEST(CodecTime, AHundredTimesSlowerEncodeFinishesMeasurablyLater) {
  const double spin = 1e-4;
  const double fast = ring_with_timed_codec(spin);
  const double slow = ring_with_timed_codec(100 * spin);
  // Every worker encodes once before its first hop: the ring starts ~99 x 0.1 ms later.
  EXPECT_GT(slow - fast, 0.9 * 99 * spin) << "fast " << fast << " s, slow " << slow << " s";
}

}  // namespace
}  // namespace gradwire
