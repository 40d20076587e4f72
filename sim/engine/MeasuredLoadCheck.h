// Whether a `measured` run's passes ran on cores of their own. Each forward/backward pass is
// timed on two clocks (common/WorkStopwatch.h): wall time and the CPU time of the thread that
// ran it. On an idle core they agree; when other programs hold the cores, wall time grows and
// CPU time does not. The check adds both up over the run and, when they disagree by more than
// kTolerance of the CPU time, summary.json gets a warning (docs/outputs.md, "warnings").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/WorkStopwatch.h"

namespace gradwire {

class MeasuredLoadCheck {
 public:
  /// Wall and CPU time may differ by this fraction of the CPU time before the check warns.
  static constexpr double kTolerance = 0.2;

  /// `charged`: the clock the run's simulated compute read; `threads`: LibTorch's intra-op
  /// threads of a pass.
  MeasuredLoadCheck(MeasuredClock charged, int threads);

  /// One pass: its wall seconds and its thread's CPU seconds.
  void add(double wall_s, double cpu_s);

  double wall_s() const { return wall_s_; }
  double cpu_s() const { return cpu_s_; }
  /// True when the totals disagree by more than kTolerance.
  bool contended() const;
  /// What a user reads in summary.json's warnings (and on stderr) when contended().
  std::string warning() const;
  /// summary.json's "measured_compute": the clock charged, the threads and both totals.
  nlohmann::json to_json() const;

 private:
  MeasuredClock charged_;
  int threads_;
  double wall_s_ = 0;
  double cpu_s_ = 0;
  long passes_ = 0;
};

}  // namespace gradwire
