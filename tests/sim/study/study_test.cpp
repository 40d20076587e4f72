// Sweeps and reports: expansion, parallel runs that survive a failure, resume, Slurm output,
// and a rendered report whose tables match results.csv.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "RunGradwire.h"

#include "common/ConfigError.h"
#include "common/FileLock.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/study/NetworkLabel.h"
#include "sim/study/SweepPlan.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

nlohmann::json base_scenario() {
  return {{"gradwire", 1},
          {"name", "x"},
          {"model", {{"kind", "mlp"}, {"hidden", {16}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 800}, {"test_samples", 200}}},
          {"training", {{"workers", 2}, {"steps", 12}, {"batch", 8}, {"eval_every", 4},
                        {"target_accuracy", 0.3}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.001}}}};
}

nlohmann::json sweep_doc() {
  return {{"gradwire_sweep", 1},
          {"name", "tiny"},
          {"base", base_scenario()},
          {"set", {{"training.batch", 4}}},
          {"grid", {{"network.rate", {"100Mbps", "1Gbps"}}}},
          {"zip", {{"codec", {{{"kind", "none"}}, {{"kind", "topk"}, {"ratio", 0.1}}}},
                   {"training.workers", {2, 3}}}},
          {"seeds", {1, 2}}};
}

TEST(SweepPlan, ExpandsGridTimesZipTimesSeeds) {
  const SweepPlan plan = SweepPlan::expand(sweep_doc(), ".");
  ASSERT_EQ(plan.runs.size(), 2u * 2u * 2u);
  EXPECT_EQ(plan.axes, (std::vector<std::string>{"network.rate", "codec", "training.workers", "seed"}));
  const SweepRun& r = plan.runs[3];  // rate 100Mbps, zip tuple 1 (topk, 3 workers), seed 2
  EXPECT_EQ(r.name, "rate=100Mbps__codec=topk-ratio0.1__workers=3__seed=2");
  EXPECT_EQ(r.scenario["network"]["rate"], "100Mbps");
  EXPECT_EQ(r.scenario["codec"]["kind"], "topk");
  EXPECT_EQ(r.scenario["training"]["workers"], 3);
  EXPECT_EQ(r.scenario["training"]["batch"], 4);  // from "set"
  EXPECT_EQ(r.scenario["seed"], 2);
  EXPECT_EQ(r.scenario["name"], r.name);
  std::set<std::string> names;
  for (const auto& run : plan.runs) names.insert(run.name);
  EXPECT_EQ(names.size(), plan.runs.size());
}

TEST(SweepPlan, ExcludeDropsTheCombinationsItSelects) {
  auto doc = sweep_doc();
  doc["exclude"] = {{{"codec.kind", "topk"}, {"network.rate", "1Gbps"}}};
  const SweepPlan plan = SweepPlan::expand(doc, ".");
  ASSERT_EQ(plan.runs.size(), 8u - 2u);  // topk at 1 Gbps, both seeds
  for (const auto& run : plan.runs) {
    EXPECT_FALSE(run.scenario["codec"]["kind"] == "topk" && run.scenario["network"]["rate"] == "1Gbps")
        << run.name;
  }
  // An excluded combination need not be a valid scenario: the sweep validates what it runs.
  doc = sweep_doc();
  doc["zip"]["training.workers"] = {2, 0};
  doc["exclude"] = {{{"training.workers", 0}}};
  EXPECT_EQ(SweepPlan::expand(doc, ".").runs.size(), 4u);
}

// A null axis value leaves its key out of that run's scenario, so one section can be given to
// some runs only (participation to the federated ones of a study).
TEST(SweepPlan, NullAxisValueLeavesTheKeyOut) {
  auto doc = sweep_doc();
  doc["base"]["topology"] = {{"kind", "ps"}, {"mode", "sync"}};  // where participation applies
  doc["base"]["participation"] = {{"clients_per_round", 2}};
  doc["zip"]["participation"] = {nullptr, {{"clients_per_round", 1}}};
  const SweepPlan plan = SweepPlan::expand(doc, ".");
  ASSERT_EQ(plan.runs.size(), 8u);
  int with = 0, without = 0;
  for (const auto& run : plan.runs) {
    if (run.scenario.contains("participation")) {
      EXPECT_EQ(run.scenario["participation"]["clients_per_round"], 1) << run.name;
      ++with;
    } else {
      ++without;
    }
  }
  EXPECT_EQ(with, 4);
  EXPECT_EQ(without, 4);
}

// A whole network object as an axis value names its run by the network's label, with the
// hash of the value keeping two networks with one label apart; a given label is used as given.
TEST(SweepPlan, NamesNetworkObjectsByTheirLabel) {
  nlohmann::json doc = sweep_doc();
  doc["grid"] = {{"network",
                  {{{"family", "ethernet"}, {"rate", "100Mbps"}},
                   {{"family", "ethernet"}, {"rate", "100Mbps"}, {"delay", "1ms"}},
                   {{"family", "wifi"}, {"placement", {{"kind", "disc"}, {"radius_m", 15}}}},
                   {{"family", "wifi"}, {"label", "lab Wi-Fi (2nd floor)"}}}}};
  const SweepPlan plan = SweepPlan::expand(doc, ".");
  ASSERT_EQ(plan.runs.size(), 4u * 2u * 2u);
  const auto name_of = [&](std::size_t network, std::size_t tuple) {
    return plan.runs[(network * 2 + tuple) * 2].name;  // seed 1
  };
  const auto starts = [](const std::string& name, const std::string& prefix) {
    return name.compare(0, prefix.size(), prefix) == 0;
  };
  EXPECT_TRUE(starts(name_of(0, 0), "network=Ethernet-100-Mbit-s-")) << name_of(0, 0);
  EXPECT_TRUE(starts(name_of(1, 0), "network=Ethernet-100-Mbit-s-")) << name_of(1, 0);
  EXPECT_NE(name_of(0, 0), name_of(1, 0));
  // The label counts the run's workers (the zip gives 2, then 3).
  EXPECT_TRUE(starts(name_of(2, 0), "network=802.11ax-80-MHz-2-stations-within-15-m-")) << name_of(2, 0);
  EXPECT_TRUE(starts(name_of(2, 1), "network=802.11ax-80-MHz-3-stations-within-15-m-")) << name_of(2, 1);
  EXPECT_TRUE(starts(name_of(3, 0), "network=lab-Wi-Fi-2nd-floor-")) << name_of(3, 0);
  // Then 8 hex digits, and the other axes as before.
  EXPECT_EQ(name_of(3, 1).substr(std::string("network=lab-Wi-Fi-2nd-floor-").size() + 8),
            "__codec=topk-ratio0.1__workers=3__seed=1");
  EXPECT_EQ(network_label(plan.runs[0].scenario["network"], 2), "Ethernet 100 Mbit/s");
}

TEST(SweepPlan, RejectsBadSweepsWithPaths) {
  auto expect_path = [](nlohmann::json doc, const std::string& path) {
    try {
      SweepPlan::expand(doc, ".");
      ADD_FAILURE() << "accepted " << doc.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  auto doc = sweep_doc();
  doc["zip"]["training.workers"] = {2};
  expect_path(doc, "zip.training.workers");
  doc = sweep_doc();
  doc["axes"] = 1;
  expect_path(doc, "axes");
  doc = sweep_doc();
  doc["grid"]["training.workers"] = {0};  // an invalid run: named by its scenario path
  doc["zip"].erase("training.workers");
  expect_path(doc, "training.workers");
  doc = sweep_doc();
  doc["grid"]["network.rate"] = nlohmann::json::array();
  expect_path(doc, "grid.network.rate");
  // A rule between sections (faults need TCP) refuses the one run that breaks it before any
  // run starts, as `gradwire run` would refuse it.
  doc = sweep_doc();
  doc["base"]["faults"] = {{{"rank", 1}, {"leave_at", "1ms"}}};
  doc["grid"]["network.transport"] = {{{"kind", "tcp"}}, {{"kind", "udp"}}};
  expect_path(doc, "network.transport");
  // An exclusion that matches no run is a typo; one that removes every run leaves no sweep.
  doc = sweep_doc();
  doc["exclude"] = {{{"codec.kind", "tpok"}}};
  expect_path(doc, "exclude[0]");
  doc["exclude"] = {{{"codec.kind", "none"}}, nlohmann::json::object()};
  expect_path(doc, "exclude[1]");
  doc["exclude"] = {{{"codec.kind", "none"}}, {{"codec.kind", "topk"}}};
  expect_path(doc, "exclude");
  doc["exclude"] = "topk";
  expect_path(doc, "exclude");
  // 100 x 100 x 2 x 2 seeds = 40,000 runs: refused before one scenario is made.
  doc = sweep_doc();
  std::vector<int> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[static_cast<std::size_t>(i)] = i + 1;
  doc["grid"]["training.steps"] = hundred;
  doc["grid"]["training.batch"] = hundred;
  expect_path(doc, "grid");
  // A question whose selectors pick no run, or that splits by a key the runs lack, is refused
  // before anything runs.
  const nlohmann::json question = {{"text", "Does top-k beat dense?"},
                                   {"candidate", {{"codec.kind", "topk"}}},
                                   {"baseline", {{"codec.kind", "none"}}},
                                   {"per", {"network.rate"}}};
  doc = sweep_doc();
  doc["question"] = question;
  EXPECT_EQ(SweepPlan::expand(doc, ".").question, question);
  doc["question"]["candidate"] = {{"codec.kind", "dgc"}};
  expect_path(doc, "question.candidate");
  doc["question"] = question;
  doc["question"]["baseline"] = nlohmann::json::object();
  expect_path(doc, "question.baseline");
  doc["question"] = question;
  doc["question"]["per"] = {"network.colour"};
  expect_path(doc, "question.per[0]");
  doc["question"] = question;
  doc["question"].erase("text");
  expect_path(doc, "question.text");
  // A selector may name a default the sweep never wrote: runs are matched once resolved.
  doc["question"] = question;
  doc["question"]["baseline"]["topology.kind"] = "ring";
  EXPECT_NO_THROW(SweepPlan::expand(doc, "."));
  // A split key that only some runs have (a Wi-Fi standard beside Ethernet) is accepted.
  doc = sweep_doc();
  doc["grid"]["network"] = {{{"family", "ethernet"}}, {{"family", "wifi"}, {"standard", "n"}}};
  doc["grid"].erase("network.rate");
  doc["question"] = question;
  doc["question"]["per"] = {"network.standard"};
  EXPECT_NO_THROW(SweepPlan::expand(doc, "."));
}

using Result = gradwire::testing::CommandResult;

Result run(const std::string& args) { return gradwire::testing::run_gradwire(args); }

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::string field;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          field += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        row.push_back(field);
        field.clear();
      } else {
        field += c;
      }
    }
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> entities[] = {
      {"&quot;", "\""}, {"&#x27;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) {
      s.replace(at, std::string(from).size(), to);
    }
  }
  return s;
}

// A cell's text as a reader sees it: without markup inside it (the <wbr> break points of a
// column name).
std::string cell_text(std::string html) {
  for (std::size_t lt; (lt = html.find('<')) != std::string::npos;) {
    html.erase(lt, html.find('>', lt) - lt + 1);
  }
  return unescape(html);
}

// Cells of the <table class="NAME"> in an HTML page, row by row.
std::vector<std::vector<std::string>> html_table(const std::string& page, const std::string& name) {
  std::vector<std::vector<std::string>> rows;
  std::size_t at = page.find("<table class=\"" + name + "\">");
  const std::size_t end = page.find("</table>", at);
  while ((at = page.find("<tr>", at)) != std::string::npos && at < end) {
    const std::size_t row_end = page.find("</tr>", at);
    std::vector<std::string> row;
    for (std::size_t c = page.find("<t", at + 4); c < row_end; c = page.find("<t", c + 1)) {
      const std::size_t open = page.find('>', c) + 1;
      const std::size_t close = page.find("</t", open);
      row.push_back(cell_text(page.substr(open, close - open)));
      c = close + 1;
    }
    rows.push_back(row);
    at = row_end;
  }
  return rows;
}

class Study : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire-study-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

/// The pid in a staging folder's name (".<run>.partial-<pid>") under `dir`, 0 when none.
pid_t staging_pid(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto at = name.find(".partial-");
    if (at != std::string::npos) return static_cast<pid_t>(std::stol(name.substr(at + 9)));
  }
  return 0;
}

TEST_F(Study, ARunDiesWithItsSweepEvenWhenTheSweepIsKilledOutright) {
  auto doc = sweep_doc();
  doc["seeds"] = {1};
  doc["base"]["training"]["steps"] = 100000000;
  doc["base"]["training"]["eval_every"] = 100000000;
  doc["zip"] = {{"codec", {{{"kind", "none"}}}}};
  doc["grid"] = {{"network.rate", {"1Gbps"}}};
  const fs::path file = dir_ / "long-sweep.json";
  std::ofstream(file) << doc.dump();
  const pid_t sweep = ::fork();
  if (sweep == 0) {
    if (FILE* null = std::fopen("/dev/null", "w")) ::dup2(fileno(null), 2);
    const std::string out = (dir_ / "out").string();
    ::execl(GRADWIRE_BINARY, GRADWIRE_BINARY, "sweep", file.c_str(), "-j", "1", "--out",
            out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t child = 0;
  for (int i = 0; i < 300 && child == 0; ++i) {  // up to 30 s for the run to start
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    child = staging_pid(dir_ / "out" / "tiny");
  }
  ASSERT_GT(child, 0) << "the sweep's run never made its staging folder";
  ::kill(sweep, SIGKILL);  // no chance to clean up: the run must still go
  int status = 0;
  ::waitpid(sweep, &status, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone = ::kill(child, 0) != 0;
  }
  EXPECT_TRUE(gone) << "run " << child << " outlived its sweep";
  EXPECT_EQ(staging_pid(dir_ / "out" / "tiny"), 0) << "the run left its staging folder";
}

TEST_F(Study, SweepRunsInParallelSurvivesAFailureResumesAndReports) {
  auto doc = sweep_doc();
  doc["seeds"] = {1};
  doc["question"] = {{"text", "Does top-k beat dense?"},
                     {"candidate", {{"codec.kind", "topk"}}},
                     {"baseline", {{"codec.kind", "none"}, {"compute.device", "cpu"}}},
                     {"per", {"network.rate"}}};
  // The third zip tuple asks for CUDA, which this build cannot give: that run fails at run
  // time (exit 2) and the others must still finish.
  doc["zip"]["codec"].push_back({{"kind", "none"}});
  doc["zip"]["training.workers"].push_back(2);
  doc["zip"]["compute.device"] = {"cpu", "cpu", "cuda"};
  std::ofstream(dir_ / "sweep.json") << doc.dump(2);
  const std::string args = "sweep " + (dir_ / "sweep.json").string() + " -j 2 --out " + (dir_ / "out").string();

  const Result first = run(args);
  EXPECT_EQ(first.code, 1) << first.output;  // one failure -> non-zero, but all rows recorded
  // Progress carries an estimate of the time left once a run has finished.
  EXPECT_NE(first.output.find(", ETA "), std::string::npos) << first.output;
  const fs::path sweep = dir_ / "out" / "tiny";
  auto rows = read_csv(sweep / "results.csv");
  ASSERT_EQ(rows.size(), 1u + 6u);
  const auto& header = rows[0];
  ASSERT_EQ(header[0], "run");
  ASSERT_EQ(header[1], "status");
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  int ok = 0, failed = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][1] == "ok") {
      ++ok;
      EXPECT_TRUE(fs::exists(sweep / rows[i][0] / "summary.json"));
      EXPECT_FALSE(rows[i][col("final_accuracy")].empty());
      EXPECT_FALSE(rows[i][col("compression_ratio")].empty());
    } else {
      ++failed;
      EXPECT_EQ(rows[i][col("compute.device")], "cuda");
      EXPECT_NE(rows[i][1].find("failed"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(failed, 2);

  // Rerun: finished runs are skipped (their outputs untouched), the failed ones retried.
  const fs::path some_summary = sweep / rows[1][0] / "summary.json";
  const auto stamp = fs::last_write_time(some_summary);
  const Result second = run(args);
  EXPECT_NE(second.output.find("4 skipped"), std::string::npos) << second.output;
  EXPECT_EQ(fs::last_write_time(some_summary), stamp);

  // Report: figures exist and the HTML results table equals results.csv cell for cell, less
  // the columns no run has a value in (energy without device profiles, perplexity, ...).
  const Result report = run("report " + sweep.string() + " --out " + (dir_ / "report").string());
  ASSERT_EQ(report.code, 0) << report.output;
  for (const char* stem : {"accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy",
                           "step_breakdown"}) {
    EXPECT_GT(fs::file_size(dir_ / "report" / (std::string(stem) + ".png")), 1000u) << stem;
    EXPECT_TRUE(fs::exists(dir_ / "report" / (std::string(stem) + ".svg"))) << stem;
  }
  std::ifstream in(dir_ / "report" / "report.html");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("Time to target"), std::string::npos);  // definitions are printed
  const auto csv = read_csv(sweep / "results.csv");
  std::vector<std::size_t> kept;
  for (std::size_t c = 0; c < csv.front().size(); ++c) {
    bool any = c < 2;
    for (std::size_t r = 1; r < csv.size() && !any; ++r) any = !csv[r][c].empty();
    if (any) kept.push_back(c);
  }
  ASSERT_LT(kept.size(), csv.front().size());  // these runs have no energy columns to show
  std::vector<std::vector<std::string>> shown;
  for (const auto& row : csv) {
    std::vector<std::string> cells;
    for (std::size_t c : kept) cells.push_back(row[c]);
    shown.push_back(cells);
  }
  EXPECT_EQ(html_table(page, "results"), shown);

  // The sweep's question travels to its folder and is answered once per rate.
  std::ifstream q(sweep / "question.json");
  EXPECT_EQ(nlohmann::json::parse(q), doc["question"]);
  const auto answer = html_table(page, "answer");
  ASSERT_EQ(answer.size(), 1u + 2u) << page;
  EXPECT_EQ(answer[1][0], "100Mbps");
  EXPECT_EQ(answer[2][0], "1Gbps");
  std::ifstream a(dir_ / "report" / "answer.json");
  EXPECT_EQ(nlohmann::json::parse(a)[0]["rows"].size(), 2u);
}

/// metrics.jsonl and summary.json of a run folder without what may differ between a replayed
/// and a trained run: wall-clock fields and the replay's note.
nlohmann::json simulated_outputs(const fs::path& run) {
  nlohmann::json out = {{"metrics", nlohmann::json::array()}};
  std::ifstream metrics(run / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("wall_time_s");
    out["metrics"].push_back(j);
  }
  std::ifstream summary(run / "summary.json");
  out["summary"] = nlohmann::json::parse(summary);
  for (const char* key : {"wall_time_s", "ns3_wall_time_s", "replayed_from"}) out["summary"].erase(key);
  return out;
}

TEST_F(Study, RunsThatDifferOnlyInTheirNetworkShareOneTraining) {
  auto doc = sweep_doc();
  doc["seeds"] = {1};
  doc["grid"]["network.rate"] = {"100Mbps", "1Gbps", "10Gbps"};
  std::ofstream(dir_ / "sweep.json") << doc.dump(2);
  const std::string base = "sweep " + (dir_ / "sweep.json").string() + " -j 2 --out ";
  const Result replayed = run(base + (dir_ / "replayed").string());
  ASSERT_EQ(replayed.code, 0) << replayed.output;
  const Result trained = run(base + (dir_ / "trained").string() + " --no-replay");
  ASSERT_EQ(trained.code, 0) << trained.output;
  EXPECT_EQ(trained.output.find("replaying"), std::string::npos) << trained.output;

  const auto rows = read_csv(dir_ / "replayed" / "tiny" / "results.csv");
  ASSERT_EQ(rows.size(), 1u + 6u);
  const auto& header = rows[0];
  const auto col = static_cast<std::size_t>(
      std::find(header.begin(), header.end(), "replayed_from") - header.begin());
  ASSERT_LT(col, header.size());
  const auto rate = static_cast<std::size_t>(
      std::find(header.begin(), header.end(), "network.rate") - header.begin());
  int replays = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const std::string& run_name = rows[i][0];
    const fs::path folder = dir_ / "replayed" / "tiny" / run_name;
    // The first network of each codec trains and records; the other two replay it.
    if (rows[i][rate] == "100Mbps") {
      EXPECT_EQ(rows[i][col], "") << run_name;
      EXPECT_TRUE(fs::exists(folder / "trace" / "steps.gwtrace")) << run_name;
    } else {
      ++replays;
      EXPECT_NE(rows[i][col].find("100Mbps"), std::string::npos) << run_name << ": " << rows[i][col];
      EXPECT_FALSE(fs::exists(folder / "trace")) << run_name;
    }
    // Replayed or trained, each run's outputs are the same, to the bit.
    EXPECT_EQ(simulated_outputs(folder), simulated_outputs(dir_ / "trained" / "tiny" / run_name))
        << run_name;
  }
  EXPECT_EQ(replays, 4);
}

TEST_F(Study, EmitSlurmWritesAnArrayJobAndRunsNothing) {
  std::ofstream(dir_ / "sweep.json") << sweep_doc().dump(2);
  const Result r = run("sweep " + (dir_ / "sweep.json").string() + " --emit-slurm --out " +
                       (dir_ / "out").string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(dir_ / "out" / "tiny" / "sweep.slurm");
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find("#SBATCH --array=0-7"), std::string::npos) << script;
  EXPECT_NE(script.find("summary.json"), std::string::npos);  // resume-safe
  EXPECT_NE(script.find(" --collect "), std::string::npos);  // each task updates results.csv
  EXPECT_EQ(std::system(("bash -n " + (dir_ / "out" / "tiny" / "sweep.slurm").string()).c_str()),
            0) << script;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "tiny" / "scenarios" /
                         "rate=1Gbps__codec=topk-ratio0.1__workers=3__seed=2.json"));
  for (const auto& e : fs::directory_iterator(dir_ / "out" / "tiny")) {
    EXPECT_FALSE(fs::exists(e.path() / "summary.json")) << "a run was executed: " << e.path();
  }
}

// Runs at once share the cores: a sweep gives each run cores / jobs LibTorch threads, except
// measured runs, which keep one thread (the thread's CPU time is what they charge).
TEST_F(Study, MeasuredRunsKeepOneThreadTheOthersGetTheirShareOfTheCores) {
  nlohmann::json doc = sweep_doc();
  doc.erase("grid");
  doc.erase("seeds");
  doc["zip"] = {{"compute", {{{"mode", "measured"}}, {{"mode", "fixed"}, {"seconds", 0.001}}}}};
  std::ofstream(dir_ / "sweep.json") << doc.dump(2);
  const Result r = run("sweep " + (dir_ / "sweep.json").string() + " -j 1 --emit-slurm --out " +
                       (dir_ / "out").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  int measured = 0, fixed = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "out" / "tiny" / "scenarios")) {
    const nlohmann::json run = nlohmann::json::parse(std::ifstream(e.path()));
    const nlohmann::json& compute = run["compute"];
    if (compute["mode"] == "measured") {
      ++measured;
      EXPECT_FALSE(compute.contains("threads")) << compute.dump();
      EXPECT_EQ(load_scenario(run).compute.intra_op_threads(), 1);
    } else {
      ++fixed;
      EXPECT_EQ(compute["threads"], cores) << compute.dump();
    }
  }
  EXPECT_EQ(measured, 1);
  EXPECT_EQ(fixed, 1);
}

// An --out that cannot hold the sweep folder (a file, somewhere under /proc, a folder where a
// file has the sweep's name) is exit 2 naming --out, for running, --emit-slurm and --collect
// alike, before anything is written.
TEST_F(Study, SweepRefusesAnOutputThatCannotHoldItsFolder) {
  std::ofstream(dir_ / "sweep.json") << sweep_doc().dump(2);
  std::ofstream(dir_ / "a-file") << "x";
  fs::create_directories(dir_ / "holder");
  std::ofstream(dir_ / "holder" / "tiny") << "x";
  for (const std::string& out : {(dir_ / "a-file").string(), std::string("/proc/gradwire-sweep"),
                                 (dir_ / "holder").string()}) {
    for (const std::string mode : {"", " --emit-slurm", " --collect"}) {
      const Result r = run("sweep " + (dir_ / "sweep.json").string() + " --out " + out + mode);
      EXPECT_EQ(r.code, 2) << out << mode << "\n" << r.output;
      EXPECT_NE(r.output.find("--out: expected a folder where the sweep folder can be made"),
                std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("filesystem error"), std::string::npos) << r.output;
    }
  }
}

// What each Slurm task does when it ends: results.csv from the summaries present, nothing run.
// (slurm_sweep_test runs the array under a real Slurm.)
TEST_F(Study, CollectRewritesResultsFromSummariesAndRunsNothing) {
  std::ofstream(dir_ / "sweep.json") << sweep_doc().dump(2);
  const std::string sweep = "sweep " + (dir_ / "sweep.json").string() + " --out " +
                            (dir_ / "out").string();
  ASSERT_EQ(run(sweep + " --emit-slurm").code, 0);
  const std::string done = "rate=100Mbps__codec=none__workers=2__seed=1";
  fs::create_directories(dir_ / "out" / "tiny" / done);
  std::ofstream(dir_ / "out" / "tiny" / done / "summary.json")
      << R"({"final_accuracy": 0.75, "bytes_on_wire": 1234})";
  const Result r = run(sweep + " --collect");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 of 8 runs have results"), std::string::npos) << r.output;
  const auto rows = read_csv(dir_ / "out" / "tiny" / "results.csv");
  ASSERT_EQ(rows.size(), 9u);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(rows[0].begin(), rows[0].end(), name) -
                                    rows[0].begin());
  };
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const bool is_done = rows[i][0] == done;
    EXPECT_EQ(rows[i][col("status")], is_done ? "ok" : "pending") << rows[i][0];
    EXPECT_EQ(rows[i][col("final_accuracy")], is_done ? "0.75" : "") << rows[i][0];
    EXPECT_EQ(rows[i][col("bytes_on_wire")], is_done ? "1234" : "") << rows[i][0];
    if (!is_done) {
      EXPECT_FALSE(fs::exists(dir_ / "out" / "tiny" / rows[i][0] / "summary.json"));
    }
  }
  EXPECT_NE(run(sweep + " --collect --emit-slurm").code, 0);  // one or the other
}

TEST(ShippedScenarios, EveryScenarioAndStudyValidates) {
  int scenarios = 0, sweeps = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(GRADWIRE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".json") continue;
    // The workloads read CIFAR files and an exported model that a checkout does not hold;
    // workloads_test validates each with its data put in place.
    if (entry.path().parent_path().filename() == "workloads") continue;
    const nlohmann::json doc = read_scenario_file(entry.path().string());
    try {
      if (doc.contains("gradwire_sweep")) {
        EXPECT_FALSE(SweepPlan::load(entry.path().string()).runs.empty()) << entry.path();
        ++sweeps;
      } else {
        load_scenario(doc);
        ++scenarios;
      }
    } catch (const ConfigError& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
  }
  EXPECT_GT(scenarios, 10);
  EXPECT_GE(sweeps, 4);
}

TEST_F(Study, ReportRejectsFoldersWithoutRuns) {
  fs::create_directories(dir_ / "empty");
  const Result r = run("report " + (dir_ / "empty").string() + " --out " + (dir_ / "rep").string());
  EXPECT_EQ(r.code, 2) << r.output;
  // report.py's own line says what is wrong; the command adds nothing to it.
  EXPECT_NE(r.output.find("error: no run folders"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("report generation failed"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gradwire

namespace gradwire {
namespace {

TEST_F(Study, ARunIsNeverRunTwiceAtOnceByTwoSweeps) {
  auto doc = sweep_doc();
  doc["seeds"] = {1};
  doc["zip"] = {{"codec", {{{"kind", "none"}}}}};
  const fs::path file = dir_ / "locked-sweep.json";
  std::ofstream(file) << doc.dump();
  const SweepPlan plan = SweepPlan::load(file.string());
  ASSERT_EQ(plan.runs.size(), 2u);
  // Another sweep process holds the first run's lock, as if it were running it now.
  const fs::path locks = dir_ / "out" / "tiny" / "locks";
  fs::create_directories(locks);
  auto held = std::make_unique<FileLock>((locks / (plan.runs[0].name + ".lock")).string());
  ASSERT_TRUE(held->held());
  const std::string sweep = "sweep " + file.string() + " --out " + (dir_ / "out").string();
  const auto first = testing::run_gradwire(sweep);
  EXPECT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("1 running in another sweep process"), std::string::npos)
      << first.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "tiny" / plan.runs[0].name / "summary.json"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "tiny" / plan.runs[1].name / "summary.json"));
  // Once its holder is gone, a restart runs it.
  held.reset();
  const auto second = testing::run_gradwire(sweep);
  EXPECT_EQ(second.code, 0) << second.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "tiny" / plan.runs[0].name / "summary.json"));
}

}  // namespace
}  // namespace gradwire
