// libFuzzer target: the emulator service's reading of client messages (sim/service): the
// frames of one ZeroMQ message (decode_frames) and the answers to its commands
// (ReportParser), for a scenario of four workers and a parameter server.
//
// Input: the message's frames, separated by kFrameSeparator; the first frame is the JSON
// header. What must hold: a message that breaks the protocol raises ProtocolError and nothing
// else, and what parses stays within the scenario: sends go to another existing host, carry
// the bytes they declare and no more than the size limit, and nothing is stamped before the
// command's time. An error's message goes into a JSON reply as the service sends it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Worker.h"
#include "sim/service/HostLayout.h"
#include "sim/service/ProtocolFrames.h"
#include "sim/service/ReportParser.h"

namespace {

using namespace gradwire;

constexpr std::string_view kFrameSeparator = "\n--frame--\n";
constexpr std::uint32_t kHost = 1;
constexpr std::int64_t kCommandNs = 1000000;

HostLayout layout() {
  HostLayout l;
  l.workers = 4;
  l.with_server = true;
  l.hosts = 5;
  return l;
}

std::vector<zmq::message_t> frames_of(const std::uint8_t* data, std::size_t size) {
  std::vector<zmq::message_t> frames;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (true) {
    const std::size_t end = input.find(kFrameSeparator, start);
    const std::string_view frame = input.substr(start, end == std::string_view::npos ? end : end - start);
    frames.emplace_back(frame.data(), frame.size());
    if (end == std::string_view::npos) break;
    start = end + kFrameSeparator.size();
  }
  return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ReportParser parser(layout(), kDefaultMaxMessageBytes);
  std::vector<zmq::message_t> frames = frames_of(data, size);
  try {
    ProtocolMessage message = decode_frames(frames, kDefaultMaxMessageBytes);
    if (message.type() == "evaluation") {
      ReportParser::parse_evaluation(message);
      return 0;
    }
    const ParsedReport report = parser.parse_report(message, kHost, kCommandNs);
    for (const ParsedSend& send : report.sends) {
      if (send.to >= layout().hosts || send.to == kHost || send.time_ns < kCommandNs ||
          send.message.payload.size() > kDefaultMaxMessageBytes) {
        std::abort();
      }
    }
    if (report.next_ns && *report.next_ns < kCommandNs) std::abort();
    for (const StepRecord& step : report.steps) {
      if (step.rank != static_cast<int>(kHost)) std::abort();
    }
  } catch (const ProtocolError& e) {
    // The service sends the message back in a JSON error reply, which must be valid UTF-8.
    nlohmann::json reply = make_header("error");
    reply["code"] = e.code();
    reply["message"] = e.what();
    reply.dump();
  }
  return 0;
}
