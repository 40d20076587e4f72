#include "common/WorkStopwatch.h"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gradwire {

double thread_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) {
    throw std::runtime_error(std::string("clock_gettime(CLOCK_THREAD_CPUTIME_ID): ") +
                             std::strerror(errno));
  }
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

WorkStopwatch::WorkStopwatch()
    : wall_start_(std::chrono::steady_clock::now()), cpu_start_s_(thread_cpu_seconds()) {}

WorkTime WorkStopwatch::elapsed() const {
  const double cpu = thread_cpu_seconds() - cpu_start_s_;
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start_;
  return WorkTime{wall.count(), cpu};
}

double WorkStopwatch::wall_start_s() const {
  return std::chrono::duration<double>(wall_start_.time_since_epoch()).count();
}

}  // namespace gradwire
