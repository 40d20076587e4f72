// The schemes' declaration is the one source of their keys: docs/schemes.md carries exactly
// what it produces, and the registry finds what scenarios name.
#include <gtest/gtest.h>

#include "GeneratedDocs.h"
#include "nodes/schemes/SchemeRegistry.h"

namespace gradwire {
namespace {

TEST(SchemeRegistry, DocsPageEqualsTheDeclaration) {
  const std::string page = std::string(GRADWIRE_SOURCE_DIR) + "/docs/schemes.md";
  EXPECT_EQ(docs::generated_block(page, "schemes --markdown"), scheme_reference_markdown())
      << "docs/schemes.md is out of date: regenerate its block with "
         "`./build/gradwire schemes --markdown`";
}

TEST(SchemeRegistry, ListsEverySchemeOnceByName) {
  const SchemeRegistry& r = SchemeRegistry::builtin();
  EXPECT_EQ(r.names(), (std::vector<std::string>{"ring", "ps", "gossip", "leader", "local"}));
  for (const auto& info : r.list()) {
    EXPECT_EQ(r.find(info.name), &r.at(info.name)) << info.name;
    EXPECT_TRUE(info.has_mode(SyncMode::kSync)) << info.name;
  }
  EXPECT_EQ(r.find("mesh"), nullptr);
}

TEST(SchemeRegistry, KindChoicesAreTheRegisteredSchemes) {
  const SchemeRegistry& r = SchemeRegistry::builtin();
  EXPECT_EQ(param_named(r.common_params(), "kind").choices, r.names());
}

TEST(SchemeRegistry, OnlyTheParameterServerHasAServerHostAndItAndLeaderSgdAnAsyncMode) {
  for (const auto& info : SchemeRegistry::builtin().list()) {
    const bool ps = info.name == "ps";
    EXPECT_EQ(info.server_host, ps) << info.name;
    EXPECT_EQ(info.has_mode(SyncMode::kAsync), ps || info.name == "leader") << info.name;
  }
  EXPECT_EQ(schemes_with_mode(SyncMode::kAsync), "\"ps\" and \"leader\"");
  // Local-update training has one where its pseudo-gradients go through a parameter server.
  const SchemeInfo& local = SchemeRegistry::builtin().at("local");
  const nlohmann::json ring_keys{{"aggregation", "ring"}}, ps_keys = nlohmann::json::object();
  const JsonFields ring(ring_keys, "topology"), ps(ps_keys, "topology");
  EXPECT_FALSE(local.with_server(local.read(ring, SyncMode::kSync)));
  EXPECT_TRUE(local.with_server(local.read(ps, SyncMode::kSync)));
  EXPECT_EQ(schemes_with_processes(), "\"ring\" and \"ps\"");
}

}  // namespace
}  // namespace gradwire
