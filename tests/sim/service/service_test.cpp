// The emulator service (gradwire serve / worker / run --processes): worker processes reproduce
// the in-process run bit for bit; randomised clients never see a delivery before its send;
// malformed, oversized, out-of-order and vanished clients are answered or reported while the
// others are served; non-loopback binds need CURVE keys.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "TestNames.h"
#include "common/ConfigError.h"
#include "RunGradwire.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/service/CurveKeys.h"
#include "sim/service/EmulatorService.h"
#include "sim/service/ServiceConnection.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

nlohmann::json small_scenario(int workers, const std::string& topology) {
  return {{"gradwire", 1},
          {"name", "svc"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 800}, {"test_samples", 200}}},
          {"training", {{"workers", workers}, {"steps", 12}, {"batch", 8}, {"eval_every", 4}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"codec", {{"kind", "topk"}, {"ratio", 0.05}, {"error_feedback", true}}},
          {"topology", {{"kind", topology}}},
          {"network", {{"rate", "1Gbps"}}}};
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("gradwire-svc-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::vector<nlohmann::json> metrics_without_wall_times(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j.erase("wall_time_s");
    out.push_back(j);
  }
  return out;
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

// --- worker processes vs in-process -----------------------------------------------------------

class Processes : public ::testing::TestWithParam<nlohmann::json> {};

/// Runs `doc` in-process and with one process per worker; every metrics line must agree.
void expect_processes_match(const nlohmann::json& doc) {
  TempDir dir;
  const std::string file = dir.write("s.json", doc.dump());
  const auto a = testing::run_gradwire("run -q " + file + " --out " + (dir.path() / "a").string());
  ASSERT_EQ(a.code, 0) << a.output;
  const auto b = testing::run_gradwire("run -q --processes " + file + " --out " +
                                       (dir.path() / "b").string());
  ASSERT_EQ(b.code, 0) << b.output;

  auto ma = metrics_without_wall_times(dir.path() / "a" / "svc" / "metrics.jsonl");
  const auto mb = metrics_without_wall_times(dir.path() / "b" / "svc" / "metrics.jsonl");
  ASSERT_FALSE(ma.empty());
  // The parameter server's phases are timed in-process only: with --processes each process
  // sees its own side of an exchange (docs/outputs.md). Everything else matches.
  for (auto& j : ma) {
    j.erase("push_s");
    j.erase("pull_s");
  }
  for (const auto& j : mb) EXPECT_FALSE(j.contains("push_s")) << j.dump();
  EXPECT_EQ(ma, mb);  // simulated times, bytes, losses, accuracies: every line
  const auto sa = read_json(dir.path() / "a" / "svc" / "summary.json");
  const auto sb = read_json(dir.path() / "b" / "svc" / "summary.json");
  for (const char* key : {"sim_time_s", "bytes_on_wire", "payload_bytes", "dense_bytes",
                          "final_accuracy", "final_train_loss", "mean_step_comm_s",
                          "mean_step_codec_s", "time_to_target_s", "mean_staleness", "steps"}) {
    EXPECT_EQ(sa[key], sb[key]) << key;
  }
  EXPECT_EQ(sa.value("energy", nlohmann::json()), sb.value("energy", nlohmann::json()));
  EXPECT_GT(sb["service"]["deliveries"].get<int>(), 0);
}

TEST_P(Processes, MatchTheInProcessRunBitForBit) {
  nlohmann::json doc = small_scenario(3, "ring");
  doc["topology"] = GetParam();
  expect_processes_match(doc);
}

TEST_P(Processes, MatchWithBucketsAndCodecTime) {
  // Buckets travel on channels of the worker's endpoint, and messages wait for the codec work
  // on each process's own device clock: the service must carry both unchanged.
  nlohmann::json doc = small_scenario(3, "ring");
  doc["topology"] = GetParam();
  doc["training"]["buckets"] = {{"size_mb", 800.0 / (1 << 20)}, {"first_mb", 400.0 / (1 << 20)}};
  doc["compute"]["codec_time"] = "profile";
  doc["compute"]["codec_device"] = "raspberry-pi-4";
  expect_processes_match(doc);
}

TEST_P(Processes, MatchOnMixedDevicesWithTheirEnergy) {
  // Each process computes on its own device and reports its codec and optimizer seconds: the
  // service's energy is the in-process run's.
  nlohmann::json doc = small_scenario(3, "ring");
  doc["topology"] = GetParam();
  doc["compute"] = {{"mode", "profile"},
                    {"profile", {"jetson-orin-nano", "raspberry-pi-5", "raspberry-pi-5"}},
                    {"threads", 1}};
  expect_processes_match(doc);
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, Processes,
    ::testing::Values(nlohmann::json{{"kind", "ring"}}, nlohmann::json{{"kind", "ps"}},
                      nlohmann::json{{"kind", "ps"}, {"mode", "async"}, {"max_staleness", 1}}),
    [](const auto& info) {
      return testing_names::sanitize(info.param.at("kind").template get<std::string>() +
                                     (info.param.contains("mode") ? "_async" : ""));
    });

TEST(Processes, RefuseSchemesThatEvaluateEveryModelInOnePlace) {
  TempDir dir;
  nlohmann::json doc = small_scenario(2, "gossip");
  doc["codec"] = {{"kind", "none"}};
  const auto r = testing::run_gradwire("run -q --processes " + dir.write("g.json", doc.dump()) +
                                       " --out " + (dir.path() / "o").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("topology.kind"), std::string::npos) << r.output;
}

// --- a service in this process, clients driven by the test -------------------------------------

/// Runs a service on a free loopback port in a background thread (the only thread touching
/// ns-3), for clients the test drives.
class ServiceThread {
 public:
  ServiceThread(const nlohmann::json& doc, ServiceOptions options) {
    if (options.bind == ServiceOptions().bind) options.bind = "tcp://127.0.0.1:*";
    service_ = std::make_unique<EmulatorService>(load_scenario(doc), options);
    endpoint_ = service_->bind();
    thread_ = std::thread([this] { result_ = service_->serve("", nullptr, &log_); });
  }
  ~ServiceThread() { join(); }
  const std::string& endpoint() const { return endpoint_; }
  const ServiceResult& join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }
  std::string log() const { return log_.str(); }

 private:
  std::unique_ptr<EmulatorService> service_;
  std::string endpoint_;
  std::thread thread_;
  ServiceResult result_;
  std::ostringstream log_;
};

ProtocolMessage expect_message(ServiceConnection& c, double timeout_s = 5) {
  auto m = c.receive(timeout_s);
  if (!m) throw std::runtime_error("no message from the service within the timeout");
  return std::move(*m);
}

std::string expect_error(ServiceConnection& c) {
  ProtocolMessage m = expect_message(c);
  EXPECT_EQ(m.type(), "error") << m.header.dump();
  return m.header.value("code", "");
}

nlohmann::json hello(int rank) {
  nlohmann::json h = make_header("hello");
  h["role"] = "worker";
  h["rank"] = rank;
  return h;
}

nlohmann::json report(std::uint64_t seq, std::optional<std::int64_t> next, bool finished = false) {
  nlohmann::json r = make_header("report");
  r["seq"] = seq;
  r["sends"] = nlohmann::json::array();
  r["next_ns"] = next ? nlohmann::json(*next) : nlohmann::json();
  r["finished"] = finished;
  return r;
}

/// One randomised client: at each command it checks causality, then sends a few messages at
/// random instants not before now and announces a random next instant.
struct RandomClient {
  std::unique_ptr<ServiceConnection> connection;
  std::uint32_t host = 0;
  std::mt19937_64 rng;
  std::int64_t clock_ns = 0;                 // the latest command's time
  std::optional<std::int64_t> announced_ns;  // the next instant we announced
  int commands = 0;
  bool finished = false;
  bool ended = false;
};

TEST(Causality, RandomisedClientsNeverSeeADeliveryBeforeItsSend) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    constexpr int kHosts = 4;
    constexpr int kCommandsEach = 40;
    ServiceOptions options;
    options.client_timeout_s = 10;
    options.register_timeout_s = 10;
    ServiceThread service(small_scenario(kHosts, "ring"), options);

    std::vector<RandomClient> clients(kHosts);
    for (int h = 0; h < kHosts; ++h) {
      clients[h].connection = std::make_unique<ServiceConnection>(ConnectionOptions{service.endpoint(), "", 1ull << 32});
      clients[h].host = static_cast<std::uint32_t>(h);
      clients[h].rng.seed(seed * 100 + static_cast<std::uint64_t>(h));
      clients[h].connection->send(hello(h));
    }
    // Sent messages by (source, sequence): stamp, size, whether bytes travel, the bytes.
    struct Sent {
      std::int64_t time_ns;
      std::uint64_t size;
      bool data;
      std::uint32_t to;
    };
    std::map<std::pair<std::uint32_t, std::uint64_t>, Sent> sent;
    std::set<std::pair<std::uint32_t, std::uint64_t>> delivered;
    std::vector<std::uint64_t> next_seq(kHosts, 0);
    std::vector<int> pending_to(kHosts, 0);
    int deliveries = 0;

    auto answer = [&](RandomClient& c, std::uint64_t seq, std::int64_t now) {
      nlohmann::json r = report(seq, std::nullopt);
      std::vector<std::vector<std::uint8_t>> payloads;
      std::uniform_int_distribution<int> coin(0, 9);
      if (++c.commands >= kCommandsEach) {
        r["finished"] = c.finished = true;
      } else {
        const int sends = coin(c.rng) < 4 ? 1 + coin(c.rng) % 2 : 0;
        for (int i = 0; i < sends; ++i) {
          std::uint32_t to = static_cast<std::uint32_t>(c.rng() % (kHosts - 1));
          if (to >= c.host) ++to;
          const std::int64_t at = now + static_cast<std::int64_t>(c.rng() % 3) * 20000;
          const std::uint64_t size = 1 + c.rng() % 30000;
          const bool data = coin(c.rng) < 6;
          const std::uint64_t id = next_seq[c.host]++;
          nlohmann::json s = {{"to", to}, {"time_ns", at}, {"kind", c.host},
                              {"round", 0}, {"step", id}, {"size", size}, {"data", data}};
          r["sends"].push_back(s);
          if (data) {
            std::vector<std::uint8_t> p(size);
            for (std::uint64_t b = 0; b < size; ++b) p[b] = static_cast<std::uint8_t>(id * 31 + b);
            payloads.push_back(std::move(p));
          }
          sent[{c.host, id}] = Sent{at, size, data, to};
          ++pending_to[to];
        }
        // Mostly a next event soon; sometimes only wait, when a message is on its way to us.
        if (pending_to[c.host] > 0 && coin(c.rng) < 3) {
          c.announced_ns.reset();
        } else {
          c.announced_ns = now + 1 + static_cast<std::int64_t>(c.rng() % 300000);
          r["next_ns"] = *c.announced_ns;
        }
      }
      std::vector<const std::vector<std::uint8_t>*> ptrs;
      for (const auto& p : payloads) ptrs.push_back(&p);
      c.connection->send(r, ptrs);
    };

    const auto deadline = Clock::now() + std::chrono::seconds(30);
    int ended = 0;
    while (ended < kHosts && Clock::now() < deadline) {
      for (auto& c : clients) {
        if (c.ended) continue;
        auto m = c.connection->receive(0.002);
        if (!m) continue;
        const std::string type = m->type();
        if (type == "welcome") {
          c.announced_ns = m->header["start_ns"].get<std::int64_t>() + static_cast<std::int64_t>(c.rng() % 100000);
          nlohmann::json r = report(0, c.announced_ns);
          c.connection->send(r);
        } else if (type == "advance") {
          const std::int64_t t = m->header["time_ns"];
          // Time never goes back for a client, and never passes the instant it announced.
          EXPECT_GE(t, c.clock_ns);
          if (c.announced_ns) {
            EXPECT_LE(t, *c.announced_ns);
          }
          c.clock_ns = t;
          for (const auto& d : m->header["deliveries"]) {
            const auto key = std::make_pair(d["from"].get<std::uint32_t>(), d["step"].get<std::uint64_t>());
            ASSERT_TRUE(sent.count(key)) << d.dump();
            const Sent& s = sent[key];
            EXPECT_TRUE(delivered.insert(key).second) << "delivered twice: " << d.dump();
            EXPECT_EQ(s.to, c.host);
            EXPECT_GT(t, s.time_ns) << "delivered no later than sent: " << d.dump();
            EXPECT_EQ(d["sent_ns"].get<std::int64_t>(), s.time_ns);
            EXPECT_EQ(d["size"].get<std::uint64_t>(), s.size);
            EXPECT_EQ(d["data"].get<bool>(), s.data);
            if (s.data) {
              const std::vector<std::uint8_t> p = m->take_payload();
              ASSERT_EQ(p.size(), s.size);
              const std::uint64_t id = key.second;
              for (std::uint64_t b = 0; b < p.size(); b += 997) {
                EXPECT_EQ(p[b], static_cast<std::uint8_t>(id * 31 + b));
              }
            }
            --pending_to[c.host];
            ++deliveries;
          }
          answer(c, m->header["seq"].get<std::uint64_t>(), t);
        } else if (type == "end") {
          EXPECT_EQ(m->header["reason"], "complete") << m->header.dump();
          c.ended = true;
          ++ended;
        } else {
          ADD_FAILURE() << "unexpected " << m->header.dump();
        }
      }
    }
    EXPECT_EQ(ended, kHosts) << service.log();
    const ServiceResult& r = service.join();
    EXPECT_TRUE(r.complete) << r.message;
    EXPECT_GT(deliveries, 20);
    EXPECT_EQ(r.summary["service"]["error_replies"], 0) << service.log();
  }
}

// --- faults -------------------------------------------------------------------------------------

/// After `a` has sent its last report: answers b's commands as finished until the run ends,
/// and checks that both got "end" and the run completed.
const ServiceResult& finish_run(ServiceThread& service, ServiceConnection& a,
                                ServiceConnection& b) {
  for (;;) {
    ProtocolMessage m = expect_message(b);
    if (m.type() == "end") break;
    EXPECT_EQ(m.type(), "advance");
    if (m.type() != "advance") break;
    b.send(report(m.header["seq"], std::nullopt, true));
  }
  EXPECT_EQ(expect_message(a).type(), "end");
  const ServiceResult& r = service.join();
  EXPECT_TRUE(r.complete) << r.message << "\n" << service.log();
  return r;
}

/// From two welcomed workers' first reports to the end of the run: a finishes at its first
/// command, b at whatever follows (finish_run).
void run_two_workers_to_the_end(ServiceThread& service, ServiceConnection& a, ServiceConnection& b) {
  a.send(report(0, 1000));
  b.send(report(0, 5000));
  ProtocolMessage cmd = expect_message(a);
  ASSERT_EQ(cmd.type(), "advance");
  a.send(report(cmd.header["seq"], std::nullopt, true));
  finish_run(service, a, b);
}

TEST(Faults, MalformedOversizedAndOutOfOrderMessagesGetErrorsWhileOthersAreServed) {
  ServiceOptions options;
  options.max_message_bytes = 4096;
  options.client_timeout_s = 5;
  options.register_timeout_s = 5;
  ServiceThread service(small_scenario(2, "ring"), options);
  ConnectionOptions co{service.endpoint(), "", 1ull << 32};
  ServiceConnection rogue(co), a(co), b(co);

  // Before registration: garbage, a wrong version, an oversized message, no hello.
  rogue.socket().send(zmq::str_buffer("not json at all"), zmq::send_flags::none);
  EXPECT_EQ(expect_error(rogue), "malformed");
  rogue.send(nlohmann::json{{"v", 99}, {"type", "hello"}});
  EXPECT_EQ(expect_error(rogue), "unsupported_version");
  std::vector<std::uint8_t> big(10000, 7);
  rogue.send(hello(0), {&big});
  EXPECT_EQ(expect_error(rogue), "too_large");
  rogue.send(report(0, 0));
  EXPECT_EQ(expect_error(rogue), "unknown_client");
  nlohmann::json bad_rank = hello(5);
  rogue.send(bad_rank);
  EXPECT_EQ(expect_error(rogue), "bad_host");
  // A field of the wrong type is the sender's error, never the service's end.
  for (const nlohmann::json& role : {nlohmann::json(5), nlohmann::json(nullptr),
                                     nlohmann::json::array({"worker"})}) {
    nlohmann::json bad_role = hello(0);
    bad_role["role"] = role;
    rogue.send(bad_role);
    EXPECT_EQ(expect_error(rogue), "malformed") << role.dump();
  }
  rogue.send(nlohmann::json{{"v", "1"}, {"type", "hello"}});
  EXPECT_EQ(expect_error(rogue), "malformed");
  // A long non-ASCII value is quoted in the error reply without cutting a character in two.
  std::string accents = "x";  // then two-byte characters: a cut at an even offset splits one
  for (int i = 0; i < 70; ++i) accents += "\u00e9";
  rogue.send(nlohmann::json{{"v", accents}, {"type", "hello"}});
  EXPECT_EQ(expect_error(rogue), "malformed");
  // A number no double holds is the sender's malformed message, not the service's end.
  rogue.socket().send(zmq::str_buffer("{\"v\": 1e400, \"type\": \"hello\"}"), zmq::send_flags::none);
  EXPECT_EQ(expect_error(rogue), "malformed");
  // Nesting beyond the declared depth is refused before anything walks it.
  std::string deep = "{\"v\":1,\"type\":\"hello\",\"seq\":";
  for (int i = 0; i < 1000; ++i) deep += "[";
  for (int i = 0; i < 1000; ++i) deep += "]";
  deep += "}";
  rogue.socket().send(zmq::buffer(deep), zmq::send_flags::none);
  EXPECT_EQ(expect_error(rogue), "malformed");

  a.send(hello(0));
  EXPECT_EQ(expect_message(a).type(), "welcome");
  rogue.send(hello(0));
  EXPECT_EQ(expect_error(rogue), "bad_host");  // taken
  b.send(hello(1));
  EXPECT_EQ(expect_message(b).type(), "welcome");
  a.send(report(0, 1000000));
  b.send(report(0, 2000000));

  // The run starts: a is asked first (its event is earlier).
  ProtocolMessage cmd = expect_message(a);
  ASSERT_EQ(cmd.type(), "advance");
  const std::uint64_t seq = cmd.header["seq"];
  const std::int64_t t = cmd.header["time_ns"];
  EXPECT_EQ(t, 1000000);
  rogue.send(hello(1));
  EXPECT_EQ(expect_error(rogue), "registration_closed");
  b.send(report(1, std::nullopt));  // not b's turn
  EXPECT_EQ(expect_error(b), "out_of_order");
  a.send(report(seq + 7, t + 10));  // wrong sequence number
  EXPECT_EQ(expect_error(a), "out_of_order");
  nlohmann::json not_a_seq = report(seq, t + 10);
  not_a_seq["seq"] = nlohmann::json::array({nlohmann::json::array({1, 2, 3}), "long text"});
  a.send(not_a_seq);
  ProtocolMessage refusal = expect_message(a);
  EXPECT_EQ(refusal.type(), "error");
  EXPECT_FALSE(refusal.header.contains("seq")) << "an error reply echoed what the client sent";
  nlohmann::json past = report(seq, t + 10);
  past["sends"].push_back({{"to", 1}, {"time_ns", t - 1}, {"kind", 0}, {"size", 8}, {"data", false}});
  a.send(past);
  EXPECT_EQ(expect_error(a), "in_past");
  nlohmann::json self_send = report(seq, t + 10);
  self_send["sends"].push_back({{"to", 0}, {"kind", 0}, {"size", 8}, {"data", false}});
  a.send(self_send);
  EXPECT_EQ(expect_error(a), "bad_destination");
  nlohmann::json missing_frame = report(seq, t + 10);
  missing_frame["sends"].push_back({{"to", 1}, {"kind", 0}, {"size", 8}, {"data", true}});
  a.send(missing_frame);
  EXPECT_EQ(expect_error(a), "malformed");
  std::vector<std::uint8_t> too_big(5000, 1);
  nlohmann::json oversized = report(seq, t + 10);
  oversized["sends"].push_back({{"to", 1}, {"kind", 0}, {"size", too_big.size()}, {"data", true}});
  a.send(oversized, {&too_big});
  EXPECT_EQ(expect_error(a), "too_large");
  nlohmann::json huge_size = report(seq, t + 10);
  huge_size["sends"].push_back({{"to", 1}, {"kind", 0}, {"size", 1u << 30}, {"data", false}});
  a.send(huge_size);
  EXPECT_EQ(expect_error(a), "too_large");  // a size-only send is held to the limit too
  // Many size-only sends, each within the limit, add up to more than one message per other
  // host: refused before the service allocates them.
  nlohmann::json many_sizes = report(seq, t + 10);
  for (int i = 0; i < 3; ++i) {
    many_sizes["sends"].push_back({{"to", 1}, {"kind", 0}, {"size", 4000}, {"data", false}});
  }
  a.send(many_sizes);
  EXPECT_EQ(expect_error(a), "too_large");

  // The service kept serving: a valid answer goes through and the run completes.
  nlohmann::json ok = report(seq, std::nullopt, true);
  ok["sends"].push_back({{"to", 1}, {"kind", 3}, {"size", 100}, {"data", false}});
  a.send(ok);
  const ServiceResult& r = finish_run(service, a, b);
  EXPECT_GE(r.summary["service"]["error_replies"].get<int>(), 13);
}

TEST(Faults, EveryFieldOfAWrongTypeIsAnErrorToItsSenderOnly) {
  ServiceOptions options;
  options.client_timeout_s = 30;
  options.register_timeout_s = 30;
  ServiceThread service(small_scenario(2, "ring"), options);
  ConnectionOptions co{service.endpoint(), "", 1ull << 32};
  ServiceConnection a(co), b(co);
  // Values no field of the protocol accepts.
  const std::vector<nlohmann::json> wrong = {"text", nlohmann::json::array({1}),
                                             nlohmann::json{{"x", 1}}};
  int refused = 0;
  for (const char* field : {"v", "type", "role", "rank"}) {
    for (const auto& w : wrong) {
      nlohmann::json m = hello(0);
      m[field] = w;
      a.send(m);
      EXPECT_EQ(expect_message(a).type(), "error") << "hello." << field << " = " << w.dump();
      ++refused;
    }
  }
  a.send(hello(0));
  ASSERT_EQ(expect_message(a).type(), "welcome");
  b.send(hello(1));
  ASSERT_EQ(expect_message(b).type(), "welcome");
  a.send(report(0, 1000000));
  b.send(report(0, 2000000));
  ProtocolMessage cmd = expect_message(a);
  ASSERT_EQ(cmd.type(), "advance");
  const std::uint64_t seq = cmd.header["seq"];
  const std::int64_t t = cmd.header["time_ns"];

  // A report with every kind of record, each field valid, then each one made wrong in turn.
  nlohmann::json full = report(seq, t + 10);
  full["sends"].push_back({{"to", 1}, {"time_ns", t}, {"kind", 3}, {"round", 0}, {"step", 0},
                           {"size", 8}, {"data", false}});
  full["steps"] = nlohmann::json::array({{{"rank", 0}, {"step", 0}, {"start_s", 0.0},
                                          {"compute_s", 0.001}, {"comm_s", 0.0},
                                          {"codec_s", 0.0}, {"end_s", 0.001},
                                          {"bytes_sent", 8}, {"payload_bytes", 8},
                                          {"density", 1.0}, {"loss", 2.3},
                                          {"compute_wall_s", 0.0}}});
  full["updates"] = nlohmann::json::array({{{"rank", 0}, {"version", 1}, {"staleness", 0},
                                            {"sim_time_s", 0.001}}});
  std::vector<nlohmann::json::json_pointer> fields;
  for (const auto& [key, value] : full.items()) {
    fields.emplace_back("/" + key);
    if (value.is_array() && !value.empty()) {
      for (const auto& [inner, _] : value[0].items()) {
        fields.emplace_back("/" + key + "/0/" + inner);
      }
    }
  }
  for (const auto& field : fields) {
    if (field.to_string() == "/type" || field.to_string() == "/v") continue;  // seen above
    for (const auto& w : wrong) {
      nlohmann::json m = full;
      m[field] = w;
      a.send(m);
      ProtocolMessage reply = expect_message(a);
      EXPECT_EQ(reply.type(), "error") << field.to_string() << " = " << w.dump();
      ++refused;
    }
  }

  // Nothing of those was applied, and the service kept serving.
  nlohmann::json ok = report(seq, std::nullopt, true);
  a.send(ok);
  const ServiceResult& r = finish_run(service, a, b);
  EXPECT_EQ(r.summary["service"]["error_replies"].get<int>(), refused);
}

TEST(Faults, AVanishedClientIsReportedAndTheRunEndsCleanly) {
  ServiceOptions options;
  options.client_timeout_s = 1;
  options.register_timeout_s = 5;
  ServiceThread service(small_scenario(2, "ring"), options);
  ConnectionOptions co{service.endpoint(), "", 1ull << 32};
  ServiceConnection a(co), b(co);
  a.send(hello(0));
  b.send(hello(1));
  EXPECT_EQ(expect_message(a).type(), "welcome");
  EXPECT_EQ(expect_message(b).type(), "welcome");
  a.send(report(0, 1000));
  b.send(report(0, 5000));
  EXPECT_EQ(expect_message(a).type(), "advance");
  // a goes silent: no more reports.
  const auto start = Clock::now();
  ProtocolMessage end = expect_message(b, 10);
  EXPECT_EQ(end.type(), "end");
  EXPECT_EQ(end.header["reason"], "client_lost");
  EXPECT_NE(end.header["message"].get<std::string>().find("worker 0"), std::string::npos);
  const ServiceResult& r = service.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.reason, "client_lost");
  EXPECT_NE(service.log().find("worker 0 lost"), std::string::npos) << service.log();
}

TEST(Faults, HostsThatNeverRegisterEndTheServiceAfterTheRegistrationTimeout) {
  ServiceOptions options;
  options.register_timeout_s = 0.5;
  ServiceThread service(small_scenario(2, "ring"), options);
  ServiceConnection a(ConnectionOptions{service.endpoint(), "", 1ull << 32});
  a.send(hello(0));
  EXPECT_EQ(expect_message(a).type(), "welcome");
  a.send(report(0, 1000));
  EXPECT_EQ(expect_message(a).type(), "end");
  const ServiceResult& r = service.join();
  EXPECT_EQ(r.reason, "registration_timeout");
  EXPECT_NE(r.message.find("worker 1 (never registered)"), std::string::npos) << r.message;
}

/// Says hello for `rank` until welcomed or `seconds` pass (a host is busy until the service has
/// seen its former client go). Whether the welcome came.
bool welcomed_within(ServiceConnection& c, int rank, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    c.send(hello(rank));
    const ProtocolMessage m = expect_message(c);
    if (m.type() == "welcome") return true;
    if (m.header.value("code", "") != "bad_host") return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A client that says hello and disconnects holds no host: the worker that comes after it is
// welcomed and the run completes (the service sees the close through its socket monitor).
TEST(Faults, AHostWhoseClientDisconnectsAfterHelloIsFreeAgain) {
  ServiceOptions options;
  options.client_timeout_s = 30;  // longer than the test: only the disconnect can free it
  options.register_timeout_s = 12;
  ServiceThread service(small_scenario(2, "ring"), options);
  ConnectionOptions co{service.endpoint(), "", 1ull << 32};
  for (int round = 0; round < 3; ++round) {  // later ghosts' connections may reuse the fd
    auto ghost = std::make_unique<ServiceConnection>(co);
    ASSERT_TRUE(welcomed_within(*ghost, 0, 3)) << "round " << round << "\n" << service.log();
    if (round == 1) ghost->send(report(0, 1000));  // even a host that reported is freed
    ghost.reset();
  }
  ServiceConnection a(co), b(co);
  ASSERT_TRUE(welcomed_within(a, 0, 3)) << service.log();
  ASSERT_TRUE(welcomed_within(b, 1, 3)) << service.log();
  run_two_workers_to_the_end(service, a, b);
  EXPECT_NE(service.log().find("worker 0 is free again: its client disconnected"),
            std::string::npos) << service.log();
}

// A client that says hello and then stays silent holds its host only for --client-timeout.
TEST(Faults, AHostWhoseClientNeverAnswersItsWelcomeIsFreedAfterTheClientTimeout) {
  ServiceOptions options;
  options.client_timeout_s = 0.5;
  options.register_timeout_s = 10;
  ServiceThread service(small_scenario(2, "ring"), options);
  ConnectionOptions co{service.endpoint(), "", 1ull << 32};
  ServiceConnection silent(co), a(co), b(co);
  silent.send(hello(0));
  EXPECT_EQ(expect_message(silent).type(), "welcome");
  a.send(hello(0));
  EXPECT_EQ(expect_error(a), "bad_host");  // taken while the silent client may still answer
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  a.send(hello(0));
  ASSERT_EQ(expect_message(a).type(), "welcome") << service.log();
  b.send(hello(1));
  ASSERT_EQ(expect_message(b).type(), "welcome");
  // The silent client's late answer is refused; it does not end the service.
  silent.send(report(0, 1000));
  EXPECT_EQ(expect_error(silent), "unknown_client");
  run_two_workers_to_the_end(service, a, b);
  EXPECT_NE(service.log().find("worker 0 is free again: its client sent no report"),
            std::string::npos) << service.log();
}

TEST(Faults, AWorkerProcessThatDiesEndsTheRunWithAnError) {
  // A worker process that cannot run (rank outside the scenario) exits; the service started
  // by the test is told by nobody and times the registration out, but the worker's own exit
  // code and message say why.
  ServiceOptions options;
  options.register_timeout_s = 3;
  ServiceThread service(small_scenario(2, "ring"), options);
  const auto r = testing::run_gradwire("worker --connect " + service.endpoint() + " --rank 7 --timeout 5");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bad_host"), std::string::npos) << r.output;
  EXPECT_EQ(service.join().reason, "registration_timeout");
}

// --- an external trainer ------------------------------------------------------------------------

TEST(PythonClient, TrainsALogisticRegressionThroughTheService) {
  if (std::system("/usr/bin/python3 -c 'import zmq, numpy' 2>/dev/null") != 0) {
    GTEST_SKIP() << "needs Debian's python3-zmq and python3-numpy";
  }
  TempDir dir;
  const std::string cmd = std::string("/usr/bin/python3 ") + GRADWIRE_SOURCE_DIR +
                          "/examples/python/logreg_client.py --serve " + GRADWIRE_BINARY +
                          " --timeout 20 --out " + dir.path().string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("done: accuracy"), std::string::npos) << out;
  const auto summary = read_json(dir.path() / "python-logreg" / "summary.json");
  EXPECT_GT(summary["final_accuracy"].get<double>(), 0.8);
  EXPECT_EQ(summary["steps"], 60);
  EXPECT_GT(summary["sim_time_s"].get<double>(), 60 * 0.005);  // compute alone is 5 ms a step
}

// --- who may connect ------------------------------------------------------------------------

TEST(Security, LoopbackEndpointsAreRecognised) {
  for (const char* e : {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:*", "tcp://localhost:1",
                        "tcp://[::1]:5555", "ipc:///tmp/gradwire.sock", "inproc://x",
                        "tcp://127.8.9.10:7"}) {
    EXPECT_TRUE(is_loopback_endpoint(e)) << e;
  }
  for (const char* e : {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://eth0:5555",
                        "tcp://192.168.1.4:5555", "tcp://[::]:5555", "tcp://127.0.0.1.evil:1",
                        "udp://127.0.0.1:5", "tcp://127.0.0.1"}) {
    EXPECT_FALSE(is_loopback_endpoint(e)) << e;
  }
}

TEST(Security, ANonLoopbackBindWithoutCurveKeysIsRefused) {
  ServiceOptions options;
  options.bind = "tcp://0.0.0.0:*";
  EmulatorService service(load_scenario(small_scenario(2, "ring")), options);
  try {
    service.bind();
    FAIL() << "bound without keys";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("CURVE"), std::string::npos) << e.what();
  }
  TempDir dir;
  const std::string file = dir.write("s.json", small_scenario(2, "ring").dump());
  const auto r = testing::run_gradwire("serve " + file + " --bind tcp://0.0.0.0:5599");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("curve-keygen"), std::string::npos) << r.output;
}

TEST(Security, CurveClientsThatKnowTheServerKeyAreServedOthersAreNot) {
  TempDir dir;
  const std::string prefix = (dir.path() / "svc").string();
  const auto k = testing::run_gradwire("curve-keygen " + prefix);
  ASSERT_EQ(k.code, 0) << k.output;
  EXPECT_EQ(fs::status(prefix + ".secret").permissions() & fs::perms::others_read, fs::perms::none);
  ServiceOptions options;
  options.bind = "tcp://0.0.0.0:*";  // allowed: CURVE keys are given
  options.curve_secret_key_file = prefix + ".secret";
  options.register_timeout_s = 2;
  ServiceThread service(small_scenario(1, "ring"), options);
  const std::string port = service.endpoint().substr(service.endpoint().rfind(':'));
  const std::string endpoint = "tcp://127.0.0.1" + port;

  ServiceConnection stranger(ConnectionOptions{endpoint, "", 1ull << 32});
  stranger.send(hello(0));
  EXPECT_FALSE(stranger.receive(0.5).has_value());  // no handshake, no service

  ServiceConnection friendly(
      ConnectionOptions{endpoint, read_curve_public_key(prefix + ".public", "key"), 1ull << 32});
  friendly.send(hello(0));
  ProtocolMessage w = expect_message(friendly);
  EXPECT_EQ(w.type(), "welcome");
  friendly.send(report(0, std::nullopt, true));
  EXPECT_EQ(expect_message(friendly).type(), "end");
  EXPECT_TRUE(service.join().complete);
}

}  // namespace
}  // namespace gradwire
