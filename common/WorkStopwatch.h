// Times a piece of work two ways at once: wall time (steady_clock) and the CPU time of the
// calling thread (CLOCK_THREAD_CPUTIME_ID, user and system). The thread's CPU time is what the
// work costs on a core of its own: it stops while other programs hold the core, so it does not
// grow with the machine's load the way wall time does. It does not count what other threads
// did for the work (a thread pool's helpers) or time spent waiting (for a lock, a sleep, a GPU
// to finish its kernels): those need wall time. `measured` compute and codec time charge one
// or the other (MeasuredClock); the two together say whether the machine was contended.
#pragma once

#include <chrono>

namespace gradwire {

/// Which of a stopwatch's two times a measurement charges.
enum class MeasuredClock {
  kThreadCpu,  ///< the calling thread's CPU time: independent of other programs' load
  kWall,       ///< steady_clock: includes waits and other threads' parallel work
};

/// Seconds of CPU time the calling thread has used since it started.
double thread_cpu_seconds();

/// One measurement: both clocks' seconds.
struct WorkTime {
  double wall_s = 0;
  double cpu_s = 0;
  double on(MeasuredClock clock) const { return clock == MeasuredClock::kWall ? wall_s : cpu_s; }
};

class WorkStopwatch {
 public:
  /// Starts both clocks now, on the calling thread.
  WorkStopwatch();
  /// Both clocks' seconds since the start; call it on the thread that started the stopwatch.
  WorkTime elapsed() const;
  /// The wall instant it started, in steady_clock seconds since its epoch.
  double wall_start_s() const;

 private:
  std::chrono::steady_clock::time_point wall_start_;
  double cpu_start_s_;
};

}  // namespace gradwire
