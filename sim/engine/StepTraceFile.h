// The step trace's file, trace/steps.gwtrace in a run folder: a compact, versioned, checked
// binary format (docs/outputs.md, "Step trace", describes every field).
//
//   "GWTRACE\0" (8 bytes), version u32 (1)
//   sections, each: tag (4 ASCII bytes), body length u64, body, CRC-32 of the body u32; the
//   bodies of STEP, EVAL and CODE are zstd frames of their content
//     META  JSON: the recorded scenario, parameters, workers, steps, buckets
//     STEP  per rank, per step: participated, loss, compute_s, optimizer_s, release instants
//     EVAL  per evaluation: step, accuracy, top-5, loss, perplexity, samples, consensus
//     CODE  per bucket and codec instance: its calls and its stateless work table
//     END.  empty: the file is complete
// Numbers are little-endian; f64 are IEEE-754 bit patterns, so every value repeats exactly.
// Reading checks every length, the checksums and that the sections fit the META section; a
// corrupt or truncated file is a StepTraceError naming the file and the byte offset.
#pragma once

#include <stdexcept>
#include <string>

#include "common/ByteSpan.h"
#include "sim/engine/StepTrace.h"

namespace gradwire {

class StepTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The trace's bytes.
Bytes encode_step_trace(const StepTrace& trace);

/// Parses a trace's bytes; `name` (a path) is named in errors. Throws StepTraceError.
StepTrace decode_step_trace(ByteSpan bytes, const std::string& name);

/// Writes the trace to `path` atomically.
void write_step_trace(const StepTrace& trace, const std::string& path);

/// Reads a trace file, or the trace of a run folder (`<run>/trace/steps.gwtrace`). Throws
/// StepTraceError (also for a missing or unreadable file).
StepTrace read_step_trace(const std::string& path);

/// The trace file a path names: `path` itself, or the trace inside a run folder.
std::string step_trace_path(const std::string& path);

/// Name of the trace file inside a run folder.
inline constexpr const char* kStepTraceFile = "trace/steps.gwtrace";

}  // namespace gradwire
