// libFuzzer target: the availability trace reader of participation (sim/engine/
// ParticipationSection.h) on arbitrary bytes. The first byte picks the run's workers (1 to 64),
// the rest is the trace file's text.
//
// What must hold: a trace that is not valid raises ConfigError at
// participation.availability.trace and nothing else. A trace that is read gives, per rank,
// intervals with 0 <= start < end, in time order and without overlap, for ranks of the run
// only; written back as text (seconds to 17 digits) it reads to the same intervals.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/ConfigError.h"
#include "sim/engine/ParticipationSection.h"

namespace {

std::string seconds_text(double s) {
  if (std::isinf(s)) return "inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", s);
  return buf;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gradwire;
  if (size == 0) return 0;
  const int workers = 1 + data[0] % 64;
  std::istringstream text(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  std::vector<std::vector<AvailableInterval>> trace;
  try {
    trace = read_availability_trace(text, "fuzz.csv", workers);
  } catch (const ConfigError& e) {
    if (e.path() != "participation.availability.trace") {
      std::fprintf(stderr, "error at %s, expected the trace's key: %s\n", e.path().c_str(),
                   e.what());
      std::abort();
    }
    return 0;
  }
  if (trace.size() != static_cast<std::size_t>(workers)) std::abort();
  std::string again = "rank,start_s,end_s\n";
  for (std::size_t rank = 0; rank < trace.size(); ++rank) {
    double previous_end = 0;
    for (const AvailableInterval& x : trace[rank]) {
      if (!(x.start_s >= 0) || !(x.end_s > x.start_s) || std::isinf(x.start_s) ||
          x.start_s < previous_end) {
        std::fprintf(stderr, "rank %zu: interval [%g, %g) after %g\n", rank, x.start_s, x.end_s,
                     previous_end);
        std::abort();
      }
      previous_end = x.end_s;
      again += std::to_string(rank) + "," + seconds_text(x.start_s) + "," +
               seconds_text(x.end_s) + "\n";
    }
  }
  std::istringstream written(again);
  const auto read_again = read_availability_trace(written, "again.csv", workers);
  for (std::size_t rank = 0; rank < trace.size(); ++rank) {
    if (read_again[rank].size() != trace[rank].size()) std::abort();
    for (std::size_t i = 0; i < trace[rank].size(); ++i) {
      if (read_again[rank][i].start_s != trace[rank][i].start_s ||
          read_again[rank][i].end_s != trace[rank][i].end_s) {
        std::fprintf(stderr, "rank %zu interval %zu reads back differently\n", rank, i);
        std::abort();
      }
    }
  }
  return 0;
}
