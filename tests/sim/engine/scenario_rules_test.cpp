// Every rule between a scenario's sections is checked when it is loaded (so `gradwire validate`
// and a sweep's expansion refuse it) and names the key to change. Each case starts from a
// scenario that loads and changes what breaks exactly one rule.
#include <gtest/gtest.h>

#include "common/ConfigError.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json valid() {
  return {{"gradwire", 1},
          {"name", "rules"},
          {"model", {{"kind", "mlp"}, {"hidden", {8}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 64}, {"test_samples", 16}}},
          {"training", {{"workers", 4}, {"steps", 2}}},
          {"compute", {{"mode", "fixed"}}}};
}

struct RuleCase {
  std::string name;
  nlohmann::json patch;  ///< merged into valid()
  std::string path;      ///< the key the error names
};

class ScenarioRule : public ::testing::TestWithParam<RuleCase> {};

nlohmann::json faults() { return {{{"rank", 1}, {"leave_at", "1ms"}}}; }

TEST_P(ScenarioRule, IsRefusedAtValidationNamingTheKey) {
  nlohmann::json doc = valid();
  doc.merge_patch(GetParam().patch);
  try {
    load_scenario(doc);
    ADD_FAILURE() << "loaded " << doc.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), GetParam().path) << e.what();
  }
}

TEST(ScenarioRules, SizesPastInt64AreCountedWithoutWrappingAround) {
  nlohmann::json doc = valid();
  doc["dataset"]["shape"] = {3, 4294967296LL, 4294967296LL};
  try {
    load_scenario(doc);
    ADD_FAILURE() << "loaded " << doc.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "model") << e.what();
    EXPECT_EQ(std::string(e.what()).find("-9223372036854775808"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3, 4294967296, 4294967296]"), std::string::npos)
        << e.what();
  }
}

TEST(ScenarioRules, TheValidScenarioLoadsWithEachSectionThatTheCasesBreak) {
  // Each case's section is fine on its own: only the combination is refused.
  for (const nlohmann::json& patch : {
           nlohmann::json{{"faults", faults()}},
           nlohmann::json{{"codec", {{"kind", "powersgd"}}}},
           nlohmann::json{{"network", {{"transport", {{"kind", "udp"}}}}}},
           nlohmann::json{{"topology", {{"kind", "gossip"}, {"overlap", true}}}},
           nlohmann::json{{"topology", {{"kind", "gossip"}, {"tau", 2}}}},
           nlohmann::json{{"topology", {{"kind", "gossip"}, {"peers", 2}}}},
           nlohmann::json{{"topology", {{"kind", "leader"}}}},
           nlohmann::json{{"topology", {{"kind", "leader"}, {"mode", "async"}}}},
           nlohmann::json{{"topology", {{"kind", "ps"}, {"mode", "async"}}}},
           nlohmann::json{{"codec", {{"kind", "topk"}}}},
       }) {
    nlohmann::json doc = valid();
    doc.merge_patch(patch);
    EXPECT_NO_THROW(load_scenario(doc)) << patch.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryRule, ScenarioRule,
    ::testing::Values(
        RuleCase{"fewer_samples_than_workers", {{"dataset", {{"train_samples", 3}}}},
                 "dataset.train_samples"},
        RuleCase{"slow_worker_beyond_the_workers",
                 {{"compute", {{"slow_workers", {{{"rank", 4}, {"scale", 2.0}}}}}}},
                 "compute.slow_workers"},
        RuleCase{"faults_with_a_scheme_without_fault_handling",
                 {{"faults", faults()}, {"topology", {{"kind", "leader"}}}}, "faults"},
        RuleCase{"faults_with_the_async_parameter_server",
                 {{"faults", faults()}, {"topology", {{"kind", "ps"}, {"mode", "async"}}}},
                 "faults"},
        RuleCase{"faults_with_overlapped_gossip",
                 {{"faults", faults()}, {"topology", {{"kind", "gossip"}, {"overlap", true}}}},
                 "topology.overlap"},
        RuleCase{"faults_with_delayed_gossip",
                 {{"faults", faults()}, {"topology", {{"kind", "gossip"}, {"tau", 2}}}},
                 "topology.tau"},
        RuleCase{"faults_with_a_multi_round_codec",
                 {{"faults", faults()}, {"codec", {{"kind", "powersgd"}}}}, "codec.kind"},
        RuleCase{"faults_over_udp",
                 {{"faults", faults()}, {"network", {{"transport", {{"kind", "udp"}}}}}},
                 "network.transport"},
        RuleCase{"buckets_with_faults",
                 {{"faults", faults()}, {"training", {{"buckets", {{"size_mb", 1}}}}}},
                 "training.buckets"},
        RuleCase{"buckets_with_gossip",
                 {{"topology", {{"kind", "gossip"}}}, {"training", {{"buckets", {{"size_mb", 1}}}}}},
                 "training.buckets"},
        // 4 workers: shifts 1 and 2 only (floor(log2 3) + 1 = 2).
        RuleCase{"more_gossip_peers_than_the_graph_has",
                 {{"topology", {{"kind", "gossip"}, {"peers", 3}}}}, "topology.peers"},
        RuleCase{"compression_with_a_scheme_that_sends_parameters",
                 {{"topology", {{"kind", "gossip"}}}, {"codec", {{"kind", "topk"}}}},
                 "codec.kind"},
        RuleCase{"a_key_of_another_scheme", {{"topology", {{"kind", "ring"}, {"l_comm", 3}}}},
                 "topology.l_comm"},
        RuleCase{"staleness_bound_in_sync_mode",
                 {{"topology", {{"kind", "ps"}, {"max_staleness", 2}}}}, "topology.max_staleness"},
        RuleCase{"async_mode_for_the_ring", {{"topology", {{"kind", "ring"}, {"mode", "async"}}}},
                 "topology.mode"},
        RuleCase{"async_mode_for_gossip", {{"topology", {{"kind", "gossip"}, {"mode", "async"}}}},
                 "topology.mode"},
        RuleCase{"faults_with_async_leader_sgd",
                 {{"faults", faults()}, {"topology", {{"kind", "leader"}, {"mode", "async"}}}},
                 "faults"},
        RuleCase{"a_key_of_another_model", {{"model", {{"kind", "cnn"}, {"hidden", {8}}}}},
                 "model.hidden"},
        // Codec settings the declaration's bounds allow but the codec cannot be made with.
        RuleCase{"dropping_every_value",
                 {{"codec", {{"kind", "gradient_dropping"}, {"drop_ratio", 1}}}},
                 "codec.drop_ratio"},
        RuleCase{"warm_up_densities_that_are_not_a_list",
                 {{"codec", {{"kind", "dgc"}, {"warmup_densities", "0.25,x"}}}},
                 "codec.warmup_densities"},
        RuleCase{"a_nested_codec_that_cannot_be_made",
                 {{"codec", {{"kind", "compose"},
                             {"select", {{"kind", "dgc"}, {"warmup_densities", "2"}}}}}},
                 "codec.select.warmup_densities"},
        RuleCase{"a_key_of_another_dataset", {{"dataset", {{"unit", "char"}}}}, "dataset.unit"},
        RuleCase{"an_image_model_on_features", {{"model", {{"kind", "cnn"}, {"hidden", nullptr}}}},
                 "model.kind"},
        RuleCase{"patches_that_do_not_divide_the_image",
                 {{"model", {{"kind", "transformer"}, {"patch", 5}, {"hidden", nullptr}}},
                  {"dataset", {{"shape", {3, 32, 32}}}}},
                 "model.patch"},
        RuleCase{"images_too_small_for_vgg16",
                 {{"model", {{"kind", "vgg16"}, {"hidden", nullptr}}},
                  {"dataset", {{"shape", {3, 16, 16}}}}},
                 "model.kind"},
        RuleCase{"a_model_too_large_for_memory",
                 {{"model", {{"hidden", {1000000, 1000000}}}}}, "model"},
        // Data and activations count too, in floating point: each case allocates terabytes.
        RuleCase{"data_too_large_for_memory",
                 {{"model", {{"kind", "cnn"}, {"hidden", nullptr}}},
                  {"dataset", {{"shape", {3, 256, 256}}, {"train_samples", 10000000}}}},
                 "dataset"},
        RuleCase{"a_sample_shape_whose_size_overflows_int64",
                 {{"model", {{"kind", "transformer"}, {"d_model", 8}, {"heads", 8}, {"ff", 8},
                             {"layers", 1}, {"hidden", nullptr}}},
                  {"dataset", {{"shape", {3, 4294967296LL, 4294967296LL}}}}},
                 "model"},
        RuleCase{"attention_scores_too_large_for_memory",
                 {{"model", {{"kind", "transformer"}, {"d_model", 8}, {"heads", 8}, {"ff", 8},
                             {"layers", 1}, {"hidden", nullptr}}},
                  {"dataset", {{"vocab", 100}, {"bptt", 100000}}}},
                 "training.batch"},
        RuleCase{"a_torchscript_file_that_is_not_there",
                 {{"model", {{"kind", "torchscript"}, {"path", "/nonexistent/model.pt"},
                             {"hidden", nullptr}}}},
                 "model.path"},
        RuleCase{"an_impaired_host_beyond_the_run",
                 {{"network", {{"impairments", {{"hosts", {7}}, {"delay", "1ms"}}}}}},
                 "network.impairments.hosts[0]"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gradwire
