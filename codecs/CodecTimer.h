// Where codec time goes. A timed codec (codecs/TimedCodec.h) tells its CodecTimer how many
// simulated seconds each operation took; the timer belongs to the device (a worker, the
// server) that ran it, and the simulator adds those seconds to that device's clock.
#pragma once

#include "codecs/CodecWork.h"
#include "common/WorkStopwatch.h"

namespace gradwire {

class CodecTimer {
 public:
  virtual ~CodecTimer() = default;
  /// Codec work of `seconds` (simulated) just ran on this timer's device.
  virtual void charge(CodecOp op, double seconds) = 0;
};

/// How a timed codec turns an operation into simulated seconds.
struct CodecTiming {
  enum class Mode {
    kMeasured,  ///< the call's time on `clock` x scale
    kProfile,   ///< seconds_on(the codec's declared work, device): repeats bit for bit
  };
  Mode mode = Mode::kProfile;
  double scale = 1.0;   ///< kMeasured: simulated seconds per measured second
  CodecDevice device{}; ///< kProfile: the device's sustained rates
  /// kMeasured: the calling thread's CPU time (what the call costs on a core of its own,
  /// whatever else the machine runs), or wall time (work on a GPU, or on several threads).
  MeasuredClock clock = MeasuredClock::kThreadCpu;
};

}  // namespace gradwire
