// libFuzzer target: the step trace reader (sim/engine/StepTraceFile.h) on arbitrary bytes.
//
// What must hold: bytes that are not a valid trace raise StepTraceError and nothing else (no
// crash, no other exception, no huge allocation from a corrupt count). A trace that is read
// writes back to bytes that read to the same trace, and those bytes are stable: writing the
// second reading gives them again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "sim/engine/StepTraceFile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gradwire;
  StepTrace trace;
  try {
    trace = decode_step_trace(ByteSpan(data, size), "fuzz.gwtrace");
  } catch (const StepTraceError&) {
    return 0;
  }
  const Bytes written = encode_step_trace(trace);
  const StepTrace again = decode_step_trace(written, "written.gwtrace");
  if (encode_step_trace(again) != written) {
    std::fprintf(stderr, "a trace written back does not read to the same trace\n");
    std::abort();
  }
  if (again.steps.size() != trace.steps.size() || again.codecs.size() != trace.codecs.size()) {
    std::abort();
  }
  return 0;
}
