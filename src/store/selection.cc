#include "store/selection.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ferry::store {

struct Selection::Node {
  enum Kind { kOr, kAnd, kNot, kCmp, kNumber, kColumn, kTrue } kind = kTrue;
  enum Op { kLt, kLe, kGt, kGe, kEq, kNe } op = kLt;
  double number = 0;
  size_t value_index = 0;  // kColumn: index into columns_
  std::shared_ptr<const Node> a, b;
};

namespace {

using Node = Selection::Node;
using NodePtr = std::shared_ptr<const Node>;

class Parser {
 public:
  Parser(std::string_view text, const Schema& schema, std::vector<int32_t>* columns)
      : text_(text), schema_(schema), columns_(columns) {}

  Result<NodePtr> Run() {
    NodePtr n = FERRY_TRY(Or());
    Skip();
    if (pos_ != text_.size()) {
      return Fail("unexpected '" + std::string(text_.substr(pos_, 1)) + "'");
    }
    return n;
  }

 private:
  Error Fail(const std::string& what) const {
    return InvalidArgumentError("--where: " + what + " at position " + std::to_string(pos_)
                                + " of '" + std::string(text_) + "'");
  }
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) {
      ++pos_;
    }
  }
  bool Eat(std::string_view tok) {
    Skip();
    if (text_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  Result<NodePtr> Or() {
    NodePtr left = FERRY_TRY(And());
    while (Eat("||")) {
      NodePtr right = FERRY_TRY(And());
      left = std::make_shared<Node>(Node{.kind = Node::kOr, .a = left, .b = right});
    }
    return left;
  }
  Result<NodePtr> And() {
    NodePtr left = FERRY_TRY(Unary());
    while (Eat("&&")) {
      NodePtr right = FERRY_TRY(Unary());
      left = std::make_shared<Node>(Node{.kind = Node::kAnd, .a = left, .b = right});
    }
    return left;
  }
  Result<NodePtr> Unary() {
    if (++depth_ > 64) {
      return Fail("expression nested too deeply");
    }
    NodePtr out;
    if (Eat("!")) {
      NodePtr inner = FERRY_TRY(Unary());
      out = std::make_shared<Node>(Node{.kind = Node::kNot, .a = inner});
    } else if (Eat("(")) {
      out = FERRY_TRY(Or());
      if (!Eat(")")) {
        return Fail("expected ')'");
      }
    } else {
      NodePtr left = FERRY_TRY(Operand());
      bool found = false;
      Node::Op op = Node::kLt;
      static constexpr std::pair<std::string_view, Node::Op> kOps[] = {
          {"<=", Node::kLe}, {">=", Node::kGe}, {"==", Node::kEq},
          {"!=", Node::kNe}, {"<", Node::kLt},  {">", Node::kGt}};
      for (const auto& [text, o] : kOps) {
        if (Eat(text)) {
          op = o;
          found = true;
          break;
        }
      }
      if (!found) {
        return Fail("expected a comparison (< <= > >= == !=)");
      }
      NodePtr right = FERRY_TRY(Operand());
      out = std::make_shared<Node>(Node{.kind = Node::kCmp, .op = op, .a = left, .b = right});
    }
    --depth_;
    return out;
  }
  std::string Name() {
    Skip();
    size_t start = pos_;
    while (pos_ < text_.size()
           && (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_'
               || text_[pos_] == '.')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  NodePtr ColumnNode(int32_t c) {
    size_t k = 0;
    while (k < columns_->size() && (*columns_)[k] != c) {
      ++k;
    }
    if (k == columns_->size()) {
      columns_->push_back(c);
    }
    return std::make_shared<Node>(Node{.kind = Node::kColumn, .value_index = k});
  }
  Result<NodePtr> Operand() {
    Skip();
    if (pos_ < text_.size()
        && (std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '-'
            || text_[pos_] == '+' || text_[pos_] == '.')) {
      std::string num(text_.substr(pos_));
      char* end = nullptr;
      double v = std::strtod(num.c_str(), &end);
      if (end == num.c_str()) {
        return Fail("bad number");
      }
      pos_ += static_cast<size_t>(end - num.c_str());
      return std::make_shared<Node>(Node{.kind = Node::kNumber, .number = v});
    }
    size_t at = pos_;
    std::string name = Name();
    if (name.empty()) {
      return Fail("expected a number, a column or n(...)");
    }
    if (name == "n" && Eat("(")) {
      std::string coll = Name();
      if (!Eat(")")) {
        return Fail("expected ')' after n(" + coll);
      }
      int32_t c = schema_.Find(coll);
      if (c >= 0 && schema_.columns[static_cast<size_t>(c)].jagged()) {
        return ColumnNode(schema_.columns[static_cast<size_t>(c)].counter);
      }
      if (c >= 0 && schema_.columns[static_cast<size_t>(c)].len == 1) {
        return ColumnNode(c);
      }
      c = schema_.Find("n" + coll);
      if (c >= 0 && !schema_.columns[static_cast<size_t>(c)].jagged()) {
        return ColumnNode(c);
      }
      pos_ = at;
      return Fail("no collection '" + coll + "' (no jagged column or counter n" + coll + ")");
    }
    int32_t c = schema_.Find(name);
    if (c < 0) {
      pos_ = at;
      return Fail("no column '" + name + "'");
    }
    const ColumnSpec& spec = schema_.columns[static_cast<size_t>(c)];
    if (spec.jagged() || spec.len != 1) {
      pos_ = at;
      return Fail("column '" + name + "' is not a scalar; compare n(" + name + ") instead");
    }
    return ColumnNode(c);
  }

  std::string_view text_;
  const Schema& schema_;
  std::vector<int32_t>* columns_;
  size_t pos_ = 0;
  int depth_ = 0;
};

double Value(const Node& n, const std::vector<const rootio::Column*>& v, int64_t row) {
  if (n.kind == Node::kNumber) {
    return n.number;
  }
  return v[n.value_index]->AsDouble(static_cast<size_t>(row));
}

bool Eval(const Node& n, const std::vector<const rootio::Column*>& v, int64_t row) {
  switch (n.kind) {
    case Node::kTrue:
      return true;
    case Node::kOr:
      return Eval(*n.a, v, row) || Eval(*n.b, v, row);
    case Node::kAnd:
      return Eval(*n.a, v, row) && Eval(*n.b, v, row);
    case Node::kNot:
      return !Eval(*n.a, v, row);
    case Node::kCmp: {
      double x = Value(*n.a, v, row);
      double y = Value(*n.b, v, row);
      switch (n.op) {
        case Node::kLt:
          return x < y;
        case Node::kLe:
          return x <= y;
        case Node::kGt:
          return x > y;
        case Node::kGe:
          return x >= y;
        case Node::kEq:
          return x == y;
        case Node::kNe:
          return x != y;
      }
      return false;
    }
    default:
      return false;
  }
}

template <class T>
void ToDouble(const rootio::Column& c, int64_t n, double* out) {
  const T* v = reinterpret_cast<const T*>(c.bytes.data());
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<double>(v[i]);
  }
}

void ColumnToDouble(const rootio::Column& c, int64_t n, std::vector<double>* out) {
  out->resize(static_cast<size_t>(n));
  double* d = out->data();
  using rootio::LeafType;
  switch (c.type) {
    case LeafType::kBool:
    case LeafType::kUInt8:
      return ToDouble<uint8_t>(c, n, d);
    case LeafType::kInt8:
      return ToDouble<int8_t>(c, n, d);
    case LeafType::kInt16:
      return ToDouble<int16_t>(c, n, d);
    case LeafType::kUInt16:
      return ToDouble<uint16_t>(c, n, d);
    case LeafType::kInt32:
      return ToDouble<int32_t>(c, n, d);
    case LeafType::kUInt32:
      return ToDouble<uint32_t>(c, n, d);
    case LeafType::kInt64:
      return ToDouble<int64_t>(c, n, d);
    case LeafType::kUInt64:
      return ToDouble<uint64_t>(c, n, d);
    case LeafType::kFloat32:
      return ToDouble<float>(c, n, d);
    case LeafType::kFloat64:
      return ToDouble<double>(c, n, d);
    default:
      std::fill(d, d + n, 0.0);
  }
}

template <class Cmp>
void CompareArrays(
    const double* x, double xs, const double* y, double ys, int64_t n, uint8_t* out, Cmp cmp) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = cmp(x != nullptr ? x[i] : xs, y != nullptr ? y[i] : ys) ? 1 : 0;
  }
}

void EvalBatch(const Node& node,
               const std::vector<std::vector<double>>& cols,
               int64_t n,
               std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(n));
  uint8_t* o = out->data();
  switch (node.kind) {
    case Node::kTrue:
      std::fill(o, o + n, 1);
      return;
    case Node::kNot:
      EvalBatch(*node.a, cols, n, out);
      for (int64_t i = 0; i < n; ++i) {
        o[i] = static_cast<uint8_t>(o[i] ^ 1);
      }
      return;
    case Node::kAnd:
    case Node::kOr: {
      std::vector<uint8_t> right;
      EvalBatch(*node.a, cols, n, out);
      EvalBatch(*node.b, cols, n, &right);
      o = out->data();
      for (int64_t i = 0; i < n; ++i) {
        o[i] = node.kind == Node::kAnd ? static_cast<uint8_t>(o[i] & right[static_cast<size_t>(i)])
                                       : static_cast<uint8_t>(o[i] | right[static_cast<size_t>(i)]);
      }
      return;
    }
    case Node::kCmp: {
      auto side = [&](const Node& s, const double** arr, double* scalar) {
        *arr = s.kind == Node::kColumn ? cols[s.value_index].data() : nullptr;
        *scalar = s.kind == Node::kNumber ? s.number : 0;
      };
      const double* x = nullptr;
      const double* y = nullptr;
      double xs = 0;
      double ys = 0;
      side(*node.a, &x, &xs);
      side(*node.b, &y, &ys);
      switch (node.op) {
        case Node::kLt:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p < q; });
        case Node::kLe:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p <= q; });
        case Node::kGt:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p > q; });
        case Node::kGe:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p >= q; });
        case Node::kEq:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p == q; });
        case Node::kNe:
          return CompareArrays(x, xs, y, ys, n, o, [](double p, double q) { return p != q; });
      }
      return;
    }
    default:
      std::fill(o, o + n, 0);
  }
}

}  // namespace

void Selection::EvaluateBatch(const std::vector<const rootio::Column*>& values,
                              int64_t n,
                              std::vector<uint8_t>* mask) const {
  std::vector<std::vector<double>> cols(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    ColumnToDouble(*values[k], n, &cols[k]);
  }
  EvalBatch(*root_, cols, n, mask);
}

Selection::Selection() : root_(std::make_shared<Node>()) {}
Selection::~Selection() = default;
Selection::Selection(Selection&&) noexcept = default;
Selection& Selection::operator=(Selection&&) noexcept = default;

Result<Selection> Selection::Parse(std::string_view text, const Schema& schema) {
  Selection s;
  bool blank = text.find_first_not_of(" \t\n") == std::string_view::npos;
  if (!blank) {
    Parser p(text, schema, &s.columns_);
    s.root_ = FERRY_TRY(p.Run());
  }
  return s;
}

bool Selection::Evaluate(const std::vector<const rootio::Column*>& values, int64_t row) const {
  return Eval(*root_, values, row);
}

}  // namespace ferry::store
