// Checks a client's answers to the service's commands (PROTOCOL.md: `report`, `evaluation`)
// against the scenario and turns them into what the service acts on. A report is checked as a
// whole before any of it is used, so an invalid one gets an error reply and changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nodes/transport/Message.h"
#include "sim/service/HostLayout.h"

namespace gradwire {

struct ProtocolMessage;
struct StalenessEvent;
struct StepRecord;

/// One message a client sent, checked and ready for its host's Messenger.
struct ParsedSend {
  std::uint32_t to = 0;
  std::int64_t time_ns = 0;
  bool data = true;  ///< false: the client gave only a size; the network carries that many zeros
  Message message;
};

/// A client's answer to "welcome" or "advance".
struct ParsedReport {
  std::vector<ParsedSend> sends;
  std::optional<std::int64_t> next_ns;
  bool finished = false;
  std::vector<StepRecord> steps;
  std::vector<StalenessEvent> updates;
};

/// A client's answer to "evaluate".
struct ParsedEvaluation {
  double accuracy = 0;
  double top5_accuracy = -1;  ///< absent: not measured
  double loss = 0;
  double perplexity = -1;     ///< absent: not a language model
  std::int64_t samples = 0;
  double consensus = 0;
};

class ReportParser {
 public:
  ReportParser(const HostLayout& layout, std::uint64_t max_message_bytes);

  /// The report of host `h` answering a command for simulated instant `command_ns`; takes the
  /// payload frames of its sends. ProtocolError when any part of it is invalid.
  ParsedReport parse_report(ProtocolMessage& message, std::uint32_t h,
                            std::int64_t command_ns) const;
  static ParsedEvaluation parse_evaluation(const ProtocolMessage& message);

 private:
  StepRecord parse_step(const nlohmann::json& record, std::uint32_t h) const;

  HostLayout layout_;
  std::uint64_t max_message_bytes_;
};

}  // namespace gradwire
