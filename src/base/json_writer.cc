#include "base/json_writer.h"

#include <cassert>
#include <cmath>
#include <cstdio>

namespace ferry {

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void JsonWriter::Newline() {
  if (indent_ > 0) {
    out_ += '\n';
    out_.append(counts_.size() * static_cast<size_t>(indent_), ' ');
  }
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!counts_.empty()) {
    if (counts_.back() > 0) {
      out_ += ',';
    }
    ++counts_.back();
    Newline();
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  counts_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  assert(!counts_.empty() && !after_key_);
  bool had = counts_.back() > 0;
  counts_.pop_back();
  if (had) {
    Newline();
  }
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  counts_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  assert(!counts_.empty() && !after_key_);
  bool had = counts_.back() > 0;
  counts_.pop_back();
  if (had) {
    Newline();
  }
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  assert(!counts_.empty() && !after_key_);
  BeforeValue();
  AppendJsonString(out_, key);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  BeforeValue();
  AppendJsonString(out_, s);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  BeforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t v) {
  BeforeValue();
  out_ += std::to_string(v);
  return *this;
}

namespace {
bool AppendNonFinite(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return true;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
    return true;
  }
  return false;
}
}  // namespace

JsonWriter& JsonWriter::Float(float v) {
  BeforeValue();
  if (!AppendNonFinite(out_, static_cast<double>(v))) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    out_ += buf;
  }
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  BeforeValue();
  if (!AppendNonFinite(out_, v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
  }
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_ += json;
  return *this;
}

}  // namespace ferry
