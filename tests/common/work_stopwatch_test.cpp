// WorkStopwatch: the thread CPU clock that measured compute and codec time charge counts what
// the calling thread computes, and not the time it waits (asleep, or for another thread's
// work), which wall time counts.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "common/WorkStopwatch.h"

namespace gradwire {
namespace {

/// Keeps the calling thread busy until it has used `seconds` of its own CPU time.
void spin_cpu(double seconds) {
  const double until = thread_cpu_seconds() + seconds;
  volatile unsigned sink = 0;
  while (thread_cpu_seconds() < until) sink = sink + 1;
}

TEST(WorkStopwatch, ASleepingThreadIsNotCharged) {
  const WorkStopwatch stopwatch;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const WorkTime t = stopwatch.elapsed();
  EXPECT_GE(t.wall_s, 0.050);
  EXPECT_LT(t.cpu_s, 0.010);
  EXPECT_EQ(t.on(MeasuredClock::kWall), t.wall_s);
  EXPECT_EQ(t.on(MeasuredClock::kThreadCpu), t.cpu_s);
}

TEST(WorkStopwatch, ASpinningThreadIsChargedItsWork) {
  const WorkStopwatch stopwatch;
  spin_cpu(0.030);
  const WorkTime t = stopwatch.elapsed();
  EXPECT_GE(t.cpu_s, 0.030);
  EXPECT_LT(t.cpu_s, 0.060);  // the spin's own time, plus reading the clock
  EXPECT_GE(t.wall_s, t.cpu_s);  // the thread cannot have run longer than it existed
}

TEST(WorkStopwatch, WaitingForAnotherThreadsWorkIsNotCharged) {
  // The other thread does the work; the stopwatch's thread only waits for it to finish.
  const WorkStopwatch stopwatch;
  std::atomic<bool> done{false};
  std::thread worker([&done] {
    spin_cpu(0.040);
    done = true;
  });
  worker.join();
  const WorkTime t = stopwatch.elapsed();
  EXPECT_TRUE(done);
  EXPECT_GE(t.wall_s, 0.040);
  EXPECT_LT(t.cpu_s, 0.010);
}

TEST(WorkStopwatch, EachThreadHasItsOwnClock) {
  // A stopwatch started on one thread keeps counting that thread only, while a second
  // thread spins beside it.
  double other_cpu = 0;
  std::thread other([&other_cpu] {
    const WorkStopwatch s;
    spin_cpu(0.030);
    other_cpu = s.elapsed().cpu_s;
  });
  const WorkStopwatch mine;
  spin_cpu(0.010);
  const double my_cpu = mine.elapsed().cpu_s;
  other.join();
  EXPECT_GE(other_cpu, 0.030);
  EXPECT_GE(my_cpu, 0.010);
  EXPECT_LT(my_cpu, 0.025);
}

}  // namespace
}  // namespace gradwire
