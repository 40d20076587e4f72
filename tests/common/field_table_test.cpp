// A FieldTable is the one declaration of a configuration's keys: what it reads, refuses and
// writes back. These cases are the forms nested objects take: keys of a part of the config, and
// keys that belong only with a selector's value (a loss model's own parameters).
#include <gtest/gtest.h>

#include <string>

#include "common/ConfigError.h"
#include "common/FieldTable.h"

namespace gradwire {
namespace {

struct Shape {
  std::int64_t sides = 4;
  double size_m = 1.0;
};

struct Figure {
  std::string kind = "square";
  double radius_m = 0.5;  ///< circle only
  Shape shape;
  bool filled = false;    ///< written only when true
};

const FieldTable<Figure>& figure_keys() {
  using namespace params;
  static const FieldTable<Figure> kKeys = [] {
    FieldTable<Figure> t;
    t.add(choice("kind", "square", {"square", "circle"}, "what it is"), &Figure::kind)
        .add(number("radius_m", 0.5, 0.0, 10.0, "circle: radius", true), &Figure::radius_m)
        .only_when([](const Figure& f) { return f.kind == "circle"; })
        .add(integer("sides", 4, 3, 12, "polygon sides"), &Figure::shape, &Shape::sides)
        .add(number("size_m", 1.0, 0.0, 10.0, "edge", true), &Figure::shape, &Shape::size_m,
             [](ParamSpec s, const Figure& f) {
               s.max = static_cast<double>(f.shape.sides);  // narrowed by another part key
               return s;
             })
        .add(boolean("filled", false, "painted"), &Figure::filled)
        .written_when([](const Figure& f) { return f.filled; });
    return t;
  }();
  return kKeys;
}

std::string error_path(const nlohmann::json& object) {
  try {
    figure_keys().read_object(object, "figure");
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "";
}

TEST(FieldTable, ReadsKeysOfAPartIntoThatPart) {
  const Figure f = figure_keys().read_object({{"sides", 6}, {"size_m", 5.5}}, "figure");
  EXPECT_EQ(f.shape.sides, 6);
  EXPECT_DOUBLE_EQ(f.shape.size_m, 5.5);
  // The narrowed bound follows the part's other key: 5.5 m is too long for a triangle.
  EXPECT_EQ(error_path({{"sides", 3}, {"size_m", 5.5}}), "figure.size_m");
}

TEST(FieldTable, AConditionalKeyBelongsOnlyWithItsSelector) {
  const Figure circle = figure_keys().read_object({{"kind", "circle"}, {"radius_m", 2}}, "figure");
  EXPECT_DOUBLE_EQ(circle.radius_m, 2.0);
  // A square has no radius: the key is refused as unknown, not silently dropped.
  EXPECT_EQ(error_path({{"kind", "square"}, {"radius_m", 2}}), "figure.radius_m");
  // Unknown keys are refused whatever the selector says.
  EXPECT_EQ(error_path({{"kind", "circle"}, {"colour", "red"}}), "figure.colour");
  EXPECT_EQ(figure_keys().names(circle),
            (std::vector<std::string>{"kind", "radius_m", "sides", "size_m", "filled"}));
  EXPECT_EQ(figure_keys().names(Figure{}),
            (std::vector<std::string>{"kind", "sides", "size_m", "filled"}));
}

TEST(FieldTable, WritesWhatBelongsAndReadsItBackTheSame) {
  Figure circle;
  circle.kind = "circle";
  circle.radius_m = 3;
  circle.shape.sides = 5;
  circle.filled = true;
  const nlohmann::json written = figure_keys().write_object(circle);
  EXPECT_EQ(written, (nlohmann::json{{"kind", "circle"}, {"radius_m", 3.0}, {"sides", 5},
                                     {"size_m", 1.0}, {"filled", true}}));
  const Figure again = figure_keys().read_object(written, "figure");
  EXPECT_EQ(figure_keys().write_object(again), written);

  // A square writes no radius, and `filled` only when set.
  const nlohmann::json square = figure_keys().write_object(Figure{});
  EXPECT_FALSE(square.contains("radius_m"));
  EXPECT_FALSE(square.contains("filled"));
  EXPECT_EQ(figure_keys().read_object(square, "figure").kind, "square");
}

TEST(FieldTable, AConditionOnNoKeyIsABug) {
  FieldTable<Figure> empty;
  EXPECT_THROW(empty.only_when([](const Figure&) { return true; }), std::logic_error);
}

}  // namespace
}  // namespace gradwire
