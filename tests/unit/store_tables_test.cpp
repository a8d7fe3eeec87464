#include <doctest/doctest.h>

#include "common/store/tables.hpp"
#include "common/util/error.hpp"

using namespace jobctl::store;

namespace {

constexpr Column kThingColumns[] = {
    {"id", ColumnType::text, Writer::key},
    {"name", ColumnType::text, Writer::definition},
    {"size", ColumnType::integer, Writer::definition},
    {"seen_at", ColumnType::integer},
    {"age", ColumnType::integer, Writer::state, "NOW_US - t.seen_at"},
};
constexpr Table kThings{"t", kThingColumns};

}  // namespace

TEST_CASE("store tables: select, set and batch lists come from the one description, in its order") {
  CHECK(select_list(kThings) == "t.id, t.name, t.size, t.seen_at, NOW_US - t.seen_at");
  CHECK(select_list(kThings, "") == "id, name, size, seen_at, NOW_US - t.seen_at");
  CHECK(set_list(kThings, Writer::definition, 3) == "name = $3, size = $4");
  auto columns = batch_columns(kThings, {Writer::key, Writer::definition});
  REQUIRE(columns.size() == 3);
  CHECK(columns[0].name == "id");
  CHECK(columns[2].name == "size");
  CHECK(columns[2].type == ColumnType::integer);
  static_assert(kThings.index("seen_at") == 3);
}

TEST_CASE("store tables: cells are read by name and values written by name come back in table order") {
  Row row({std::string("x1"), std::string("box"), std::nullopt, std::string("17"), std::string("3")});
  Cells<kThings> c(row);
  CHECK(c.text("name") == "box");
  CHECK(c.is_null("size"));
  CHECK_FALSE(c.opt_i64("size"));
  CHECK(c.i64("seen_at") == 17);
  Row joined({std::string("other"), std::string("x1"), std::string("box"), std::nullopt, std::string("17"),
              std::string("3")});
  CHECK(Cells<kThings>(joined, 1).text("id") == "x1");

  Writes<kThings> w{Writer::key, Writer::definition};
  w.set("size", int64_t{4});
  w.set("id", std::string("x2"));
  CHECK_THROWS_AS(std::move(w).values(), jobctl::Error);  // name is unset: a mapper that forgot a column
  w.set("name", std::string("crate"));
  auto values = std::move(w).values();
  REQUIRE(values.size() == 3);
  CHECK(std::get<std::string>(values[0]) == "x2");
  CHECK(std::get<std::string>(values[1]) == "crate");
  CHECK(std::get<int64_t>(values[2]) == 4);
}
