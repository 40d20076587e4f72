// Units, the analytic model and the Ethernet builder's validation.
#include <gtest/gtest.h>

#include "common/ConfigError.h"
#include "common/Units.h"
#include "netmodels/AlphaBetaModel.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/NetworkFactory.h"

namespace gradwire {
namespace {

TEST(Units, ParsesRatesAndDurations) {
  double v = 0;
  ASSERT_TRUE(parse_data_rate("1Gbps", v));
  EXPECT_DOUBLE_EQ(v, 1e9);
  ASSERT_TRUE(parse_data_rate("100 Mbps", v));
  EXPECT_DOUBLE_EQ(v, 1e8);
  ASSERT_TRUE(parse_data_rate("2.5Gb/s", v));
  EXPECT_DOUBLE_EQ(v, 2.5e9);
  EXPECT_FALSE(parse_data_rate("fast", v));
  EXPECT_FALSE(parse_data_rate("10", v));
  EXPECT_FALSE(parse_data_rate("-1Gbps", v));
  ASSERT_TRUE(parse_duration("50us", v));
  EXPECT_DOUBLE_EQ(v, 50e-6);
  ASSERT_TRUE(parse_duration("2ms", v));
  EXPECT_DOUBLE_EQ(v, 2e-3);
  EXPECT_FALSE(parse_duration("2 fortnights", v));
  EXPECT_EQ(format_bps(1e9), "1Gbps");
  EXPECT_EQ(format_bps(2.5e9), "2500Mbps");
  EXPECT_EQ(format_bps(1234), "1234bps");
  EXPECT_EQ(format_bps(1e12), "1000Gbps");  // ns-3 has no Tbps
  EXPECT_EQ(format_duration(50e-6), "50us");
  EXPECT_EQ(format_duration(0.002), "2ms");
}

TEST(AlphaBeta, RingAndServerFormulas) {
  const AlphaBetaModel m(1e-4, 1e9);
  EXPECT_DOUBLE_EQ(m.transfer_time(125e6), 1e-4 + 1.0);
  // n = 4, S = 1 GB... 2(n-1) = 6 steps of S/4.
  EXPECT_NEAR(m.ring_allreduce_time(1e9, 4), 6e-4 + 6.0 / 4.0 * 8.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.ring_allreduce_time(1e9, 1), 0.0);
  EXPECT_NEAR(m.parameter_server_time(1e6, 4), 2 * (1e-4 + 4 * 8e6 / 1e9), 1e-12);
  EXPECT_THROW(AlphaBetaModel(0, 0), std::invalid_argument);
}

TEST(EthernetConfig, DefaultsAndErrors) {
  const auto resolved = resolve_network(nlohmann::json::object(), "network");
  EXPECT_EQ(resolved["family"], "ethernet");
  EXPECT_EQ(resolved["mtu"], 1500);
  const auto c = EthernetConfig::from_json({{"rate", "10Gbps"}, {"mtu", 9000}}, "network");
  EXPECT_DOUBLE_EQ(c.rate_bps, 1e10);
  EXPECT_EQ(c.mtu, 9000u);
  auto expect_error = [](const nlohmann::json& j, const std::string& path) {
    try {
      resolve_network(j, "network");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  expect_error({{"rate", "fast"}}, "network.rate");
  expect_error({{"rate", 1000}}, "network.rate");
  expect_error({{"mtu", 100}}, "network.mtu");
  expect_error({{"delay", "5 parsecs"}}, "network.delay");
  expect_error({{"family", "carrier-pigeon"}}, "network.family");
  expect_error({{"bandwidth", "1Gbps"}}, "network.bandwidth");
}

}  // namespace
}  // namespace gradwire
