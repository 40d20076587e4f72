// Reading JSON from files, command lines and clients: what a syntax error says must itself be
// sendable as JSON, whatever bytes the input held.
#include <string>

#include <gtest/gtest.h>

#include "common/JsonFields.h"

namespace gradwire {
namespace {

std::string syntax_error_of(const std::string& text) {
  try {
    parse_json(text);
  } catch (const JsonSyntaxError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(ParseJson, ASyntaxErrorQuotingInvalidUtf8IsStillValidUtf8) {
  // The parser's message quotes the bytes it read last: here half a two-byte character.
  const std::string message = syntax_error_of("{\"size\": 1\xd0\xca" "0}");
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  nlohmann::json reply = {{"type", "error"}, {"message", message}};
  EXPECT_NO_THROW(reply.dump());  // the service's error reply carries it
}

TEST(ParseJson, ANumberBeyondADoubleIsASyntaxError) {
  EXPECT_NE(syntax_error_of("[1e400]").find("not valid JSON"), std::string::npos);
  EXPECT_EQ(parse_json("[1e300]").at(0).get<double>(), 1e300);
}

}  // namespace
}  // namespace gradwire
