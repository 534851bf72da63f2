// Selection: the small expression language of `ferry store scan --where`.
//
//   expr    := and ('||' and)*
//   and     := unary ('&&' unary)*
//   unary   := '!' unary | '(' expr ')' | operand OP operand
//   operand := number | column | 'n(' name ')'
//   OP      := < <= > >= == !=
//
// A column is a scalar of the store (compared as a double); n(X) is the element count of a
// collection: the counter of jagged column X, column X itself when it is an integer scalar, or
// column "nX" (n(Muon) is nMuon). Parse errors are kInvalidArgument with the position.
// A compiled Selection is immutable; Evaluate is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rootio/column.h"
#include "store/schema.h"

namespace ferry::store {

class Selection {
 public:
  struct Node;
  // An empty text selects every event.
  static Result<Selection> Parse(std::string_view text, const Schema& schema);
  // Schema indices of the scalar columns the expression reads.
  const std::vector<int32_t>& columns() const { return columns_; }
  // values[k] is the column of columns()[k]; row is the entry within them.
  bool Evaluate(const std::vector<const rootio::Column*>& values, int64_t row) const;
  // The same for entries [0, n) at once: (*mask)[i] = 1 when entry i is selected. Converts each
  // column once and compares whole arrays (what scans use).
  void EvaluateBatch(const std::vector<const rootio::Column*>& values,
                     int64_t n,
                     std::vector<uint8_t>* mask) const;

  Selection();
  ~Selection();
  Selection(Selection&&) noexcept;
  Selection& operator=(Selection&&) noexcept;
  Selection(const Selection&) = delete;
  Selection& operator=(const Selection&) = delete;

 private:
  std::shared_ptr<const Node> root_;
  std::vector<int32_t> columns_;
};

}  // namespace ferry::store
