#include "sim/engine/MeasuredLoadCheck.h"

#include <cmath>
#include <cstdio>

namespace gradwire {

MeasuredLoadCheck::MeasuredLoadCheck(MeasuredClock charged, int threads)
    : charged_(charged), threads_(threads) {}

void MeasuredLoadCheck::add(double wall_s, double cpu_s) {
  wall_s_ += wall_s;
  cpu_s_ += cpu_s;
  ++passes_;
}

bool MeasuredLoadCheck::contended() const {
  return passes_ > 0 && std::abs(wall_s_ - cpu_s_) > kTolerance * cpu_s_;
}

std::string MeasuredLoadCheck::warning() const {
  char head[320];
  std::snprintf(head, sizeof head,
                "compute.mode \"measured\": the %ld forward/backward passes took %.3f s of wall "
                "time but %.3f s of their thread's CPU time (%.2fx), more than %.0f %% apart: "
                "other work held this machine's cores while they ran. ",
                passes_, wall_s_, cpu_s_, cpu_s_ > 0 ? wall_s_ / cpu_s_ : 0.0,
                kTolerance * 100);
  if (charged_ == MeasuredClock::kThreadCpu) {
    return std::string(head) +
           "Simulated compute was charged the CPU time, which the waiting does not inflate, "
           "though caches and memory shared with the other work can still slow a pass; for "
           "numbers that repeat, run on an idle machine or use compute.mode \"profile\".";
  }
  return std::string(head) + "Simulated compute was charged wall time (compute.threads " +
         std::to_string(threads_) +
         " > 1), so it includes that waiting: rerun on an idle machine, or leave "
         "compute.threads at its default (1 with measured compute) to charge CPU time.";
}

nlohmann::json MeasuredLoadCheck::to_json() const {
  return {{"clock", charged_ == MeasuredClock::kThreadCpu ? "thread_cpu" : "wall"},
          {"threads", threads_},
          {"passes", passes_},
          {"pass_wall_s", wall_s_},
          {"pass_cpu_s", cpu_s_}};
}

}  // namespace gradwire
