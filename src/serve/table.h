// SPDX-License-Identifier: Apache-2.0
// Protocols as tables: a table is a tuple of rows, each a Row<T> with a
// `name`, T being the type a row's requests are read into (one type a
// row). From the table come the variant of every row's T and a lookup of
// its rows by name, so that a row is all there is to add.
#pragma once

#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>

namespace pmon::serve {

template <class Row>
struct RowOf;
template <template <class> class Row, class T>
struct RowOf<Row<T>> {
  using type = T;
};
// The type a row reads into.
template <class Row>
using row_type = typename RowOf<std::remove_cvref_t<Row>>::type;

template <class Rows>
struct RowsOf;
template <class... Row>
struct RowsOf<std::tuple<Row...>> {
  using variant = std::variant<row_type<Row>...>;
};
// What a table's rows read into: one alternative a row, in its order.
template <class Rows>
using variant_of = typename RowsOf<std::remove_cvref_t<Rows>>::variant;

// Each row of `rows` by its name, as what `make` makes of it.
template <class V, class Rows, class Make>
std::map<std::string_view, V, std::less<>> by_name(const Rows& rows, Make make) {
  return std::apply(
      [&](const auto&... row) { return std::map<std::string_view, V, std::less<>>{{row.name, make(row)}...}; }, rows);
}

}  // namespace pmon::serve
