// The simulated device of one host, as two streams (CUDA streams on a GPU), so codec work
// costs simulated time where it runs:
//  * the compute stream runs backward and encoding. Encoding a bucket delays the rest of
//    backward, as PyTorch DDP's communication hooks do: they run on the stream of the
//    backward pass. Work queues behind what the stream already holds.
//  * the communication stream runs what arrives from the network: accumulating, decoding,
//    finalising and the server's aggregation (NCCL's reduction kernels run on a stream of
//    their own, beside backward). Its work queues behind earlier communication work only.
// A message produced by codec work leaves when that work is done (sends wait for the end of
// the latest work charged), and the optimizer step waits for both streams.
#pragma once

#include "codecs/CodecTimer.h"

namespace gradwire {

class DeviceStreams : public CodecTimer {
 public:
  /// Charges codec work of `seconds` now: encoding on the compute stream, the rest on the
  /// communication stream.
  void charge(CodecOp op, double seconds) override;

  /// Runs `seconds` of compute (a stretch of backward) on the compute stream once it is free;
  /// returns the simulated instant it ends.
  double run_compute(double seconds);

  /// When a message produced by the latest codec work may leave (now if there was none).
  double send_ready_at() const;
  /// When encoding charged now would start: the compute stream's next free instant.
  double encode_starts_at() const;
  /// The next message comes from the first part of the latest work, done at `instant`
  /// (pipelined chunks: the rest of the encode still runs), so it may leave then.
  void release_sends_at(double instant);
  /// When both streams are idle (now if they are).
  double idle_at() const;
  /// Codec seconds charged so far.
  double codec_seconds() const { return codec_s_; }

 private:
  double compute_free_ = 0;
  double communication_free_ = 0;
  double last_end_ = 0;
  double codec_s_ = 0;
};

}  // namespace gradwire
