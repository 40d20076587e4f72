#include "sim/service/ClockSynchronizer.h"

#include <nlohmann/json.hpp>
#include <ns3/core-module.h>

#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/SimulatedWorld.h"
#include "sim/service/ProtocolFrames.h"
#include "sim/service/ReportParser.h"
#include "sim/service/ServiceMetrics.h"
#include "sim/service/ServiceRegistration.h"

namespace gradwire {

ClockSynchronizer::ClockSynchronizer(const HostLayout& layout,
                                     const ServiceRegistration& registration,
                                     ServiceMetrics& metrics, Exchange& exchange)
    : layout_(layout),
      registration_(registration),
      metrics_(metrics),
      exchange_(exchange),
      clocks_(layout.hosts) {}

std::int64_t ClockSynchronizer::now_ns() { return ns3::Simulator::Now().GetNanoSeconds(); }

void ClockSynchronizer::attach(SimulatedWorld& world) {
  world_ = &world;
  for (std::uint32_t h = 0; h < layout_.hosts; ++h) {
    world.messengers()[h]->SetHandler([this, h](Message&& m) { on_delivery(h, std::move(m)); });
  }
}

void ClockSynchronizer::run() {
  if (ending_) return;
  running_ = true;
  ns3::Simulator::Run();
  running_ = false;
}

void ClockSynchronizer::end_if_stalled() {
  if (!end_reason_.empty()) return;
  std::string waiting;
  for (std::uint32_t h = 0; h < layout_.hosts; ++h) {
    if (!clocks_[h].finished) waiting += (waiting.empty() ? "" : ", ") + layout_.host_name(h);
  }
  finish_run("stalled", "nothing left to simulate while " + waiting + " still wait for messages");
  exchange_.note(end_message_);
}

void ClockSynchronizer::finish_run(const std::string& reason, const std::string& message) {
  if (end_reason_.empty()) {
    end_reason_ = reason;
    end_message_ = message;
  }
  ending_ = true;
  if (running_) ns3::Simulator::Stop();
}

void ClockSynchronizer::lose(std::uint32_t h, const std::string& why) {
  HostClock& c = clocks_[h];
  if (c.lost) return;
  c.lost = true;
  if (c.wake_ns >= 0) {
    ns3::Simulator::Cancel(c.wake);
    c.wake_ns = -1;
  }
  exchange_.note(layout_.host_name(h) + " lost: " + why);
  finish_run("client_lost", layout_.host_name(h) + " lost: " + why);
}

void ClockSynchronizer::apply_report(std::uint32_t h, ParsedReport&& r) {
  for (auto& s : r.sends) inject(h, std::move(s));
  for (const auto& u : r.updates) metrics_.record_staleness(u);
  for (const auto& s : r.steps) on_step(s);
  HostClock& c = clocks_[h];
  if (r.finished) {
    c.finished = true;
    set_wake(h, std::nullopt);
    bool all = true;
    for (std::uint32_t x = 0; x < layout_.hosts; ++x) {
      all = all && (!registration_.worker(x) || clocks_[x].finished);
    }
    if (all) finish_run("complete", "every worker finished");
  } else {
    set_wake(h, r.next_ns);
  }
}

void ClockSynchronizer::inject(std::uint32_t h, ParsedSend&& s) {
  if (running_ && s.time_ns == now_ns()) {
    send_now(h, std::move(s));
    return;
  }
  ns3::Simulator::Schedule(ns3::NanoSeconds(s.time_ns) - ns3::Simulator::Now(),
                           [this, h, s]() mutable { send_now(h, std::move(s)); });
}

void ClockSynchronizer::send_now(std::uint32_t h, ParsedSend&& s) {
  in_flight_[{h, s.to}].push_back(InFlight{s.data, s.time_ns});
  world_->messengers()[h]->Send(s.to, std::move(s.message));
}

/// Keeps a pending wake-up that is still right (its place among simultaneous events is where
/// an in-process worker's event would be); otherwise replaces it.
void ClockSynchronizer::set_wake(std::uint32_t h, std::optional<std::int64_t> at) {
  HostClock& c = clocks_[h];
  if (at && c.wake_ns == *at) return;
  if (c.wake_ns >= 0) {
    ns3::Simulator::Cancel(c.wake);
    c.wake_ns = -1;
  }
  if (!at || c.lost) return;
  c.wake_ns = *at;
  c.wake = ns3::Simulator::Schedule(ns3::NanoSeconds(*at) - ns3::Simulator::Now(),
                                    [this, h]() { wake(h); });
}

nlohmann::json ClockSynchronizer::advance_command(std::uint32_t h) const {
  nlohmann::json cmd = make_header("advance");
  cmd["time_ns"] = now_ns();
  cmd["bytes_sent"] = world_->messengers()[h]->bytes_sent();
  cmd["deliveries"] = nlohmann::json::array();
  return cmd;
}

void ClockSynchronizer::wake(std::uint32_t h) {
  HostClock& c = clocks_[h];
  c.wake_ns = -1;
  if (ending_ || c.lost || c.finished) return;
  const std::int64_t t = now_ns();
  auto report = exchange_.exchange_report(h, advance_command(h), {}, t);
  if (report) apply_report(h, std::move(*report));
}

void ClockSynchronizer::on_delivery(std::uint32_t h, Message&& m) {
  InFlight info;
  auto& fifo = in_flight_[{m.source, h}];
  if (!fifo.empty()) {
    info = fifo.front();
    fifo.pop_front();
  }
  HostClock& c = clocks_[h];
  if (ending_ || c.lost || c.finished) {
    metrics_.count_dropped();
    return;
  }
  metrics_.count_delivery();
  const std::int64_t t = now_ns();
  nlohmann::json cmd = advance_command(h);
  nlohmann::json d = message_entry(m, info.data);
  d["from"] = m.source;
  d["sent_ns"] = info.sent_ns;
  cmd["deliveries"].push_back(d);
  Payloads payloads;
  if (info.data) payloads.push_back(&m.payload);
  auto report = exchange_.exchange_report(h, cmd, payloads, t);
  if (report) apply_report(h, std::move(*report));
}

/// Evaluations are commands too: the evaluating host answers at the instant the step completed.
void ClockSynchronizer::on_step(const StepRecord& record) {
  const std::optional<std::int64_t> done = metrics_.record_step(record);
  if (!done) return;
  const std::uint32_t e = metrics_.evaluation_host();
  if (registration_.identity(e).empty() || clocks_[e].lost || ending_) return;
  nlohmann::json cmd = make_header("evaluate");
  cmd["step"] = *done;
  cmd["time_ns"] = now_ns();
  auto ev = exchange_.exchange_evaluation(e, cmd);
  if (ev) metrics_.record_evaluation(*done, ns3::Simulator::Now().GetSeconds(), *ev);
}

}  // namespace gradwire
